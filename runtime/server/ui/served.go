package ui

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
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

// Announce writes the ServeFile of a server on addr serving app into dir
// (the Pebble data directory it holds), so that the CLI's inspection
// commands reach it while it holds the store: as AdminUser, with a fresh
// token added to tokens unless the server is open. remove removes the
// file again; run it before the store is unlocked.
func Announce(dir, addr, app string, tokens map[string]string, open bool) (remove func() error, err error) {
	info := ServeInfo{PID: os.Getpid(), Addr: addr, User: AdminUser, App: app}
	if !open {
		info.Token = NewToken()
		tokens[info.Token] = AdminUser
	}
	return WriteServeFile(dir, info)
}

// NewToken is a fresh 192-bit bearer token, in hex.
func NewToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
