package ui

import (
	"errors"
	"syscall"
)

// Served is the client of the agentc serve that holds the Pebble store in
// dir: the ServeFile it wrote there, naming a live process; ok is false
// when there is none or its process is gone.
func Served(dir string) (c *Client, info ServeInfo, ok bool) {
	info, err := ReadServeFile(dir)
	if err != nil {
		return nil, info, false
	}
	if err := syscall.Kill(info.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return nil, info, false // its process is gone
	}
	return NewClient(info.Addr, info.Token, info.User), info, true
}
