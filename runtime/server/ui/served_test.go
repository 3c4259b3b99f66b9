package ui

import (
	"os"
	"testing"
)

// TestServed: a serve file naming this live process is served; none, or
// one naming a process that is gone, is not.
func TestServed(t *testing.T) {
	dir := t.TempDir()
	if _, _, ok := Served(dir); ok {
		t.Fatal("served without a serve file")
	}
	remove, err := WriteServeFile(dir, ServeInfo{PID: os.Getpid(), Addr: "127.0.0.1:1", Token: "t", User: AdminUser})
	if err != nil {
		t.Fatal(err)
	}
	if c, info, ok := Served(dir); !ok || c == nil || info.PID != os.Getpid() {
		t.Fatalf("served: %v %+v %v", c, info, ok)
	}
	_ = remove()
	if _, err := WriteServeFile(dir, ServeInfo{PID: 1 << 30, Addr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := Served(dir); ok {
		t.Fatal("served by a process that is gone")
	}
}
