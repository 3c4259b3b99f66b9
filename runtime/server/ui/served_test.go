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

// TestAnnounce: a closed server's serve file carries a fresh admin token,
// added to its tokens; an open server's carries none.
func TestAnnounce(t *testing.T) {
	dir := t.TempDir()
	tokens := map[string]string{"t": "u"}
	remove, err := Announce(dir, "127.0.0.1:1", "app", tokens, false)
	if err != nil {
		t.Fatal(err)
	}
	info, err := ReadServeFile(dir)
	if err != nil || info.Token == "" || tokens[info.Token] != AdminUser || info.App != "app" || info.PID != os.Getpid() {
		t.Fatalf("info %+v, tokens %v, %v", info, tokens, err)
	}
	_ = remove()
	if _, err := Announce(dir, "127.0.0.1:1", "app", nil, true); err != nil {
		t.Fatal(err)
	}
	if info, _ := ReadServeFile(dir); info.Token != "" {
		t.Errorf("an open server's serve file has a token")
	}
}
