package pebble

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The files of a store directory. Pebble owns the WALs (NNNNNN.log), tables
// (NNNNNN.sst, NNNNNN.blob), MANIFEST-N, OPTIONS-N and marker.* files;
// agentc adds LOCK.owner and the seal. Directories (per-run workspaces) are
// not the store's and are left alone.
type fileKind int

const (
	kindOther fileKind = iota
	kindLog
	kindTable
	kindBlob
	kindManifest
	kindOptions
	kindMarker
	kindLock
	kindOwner
	kindSeal
	kindMark
	kindTemp
)

// sealFile is written on Close, after Pebble closed: the name, size and (for
// WALs, MANIFESTs, OPTIONS) CRC32C of every store file. Open compares the
// directory with it, so any change to a closed store — a truncated or
// flipped WAL, a deleted table — is refused, then removes it before Pebble
// may write.
const sealFile = "agentc.seal"

func classify(name string) fileKind {
	switch {
	case name == "LOCK":
		return kindLock
	case name == ownerFile:
		return kindOwner
	case name == sealFile:
		return kindSeal
	case name == markFile:
		return kindMark
	case name == sealFile+".tmp":
		return kindTemp
	case strings.HasPrefix(name, "MANIFEST-"):
		return kindManifest
	case strings.HasPrefix(name, "OPTIONS-"):
		return kindOptions
	case strings.HasPrefix(name, "marker."):
		return kindMarker
	case strings.HasPrefix(name, "temporary.") || strings.HasSuffix(name, ".tmp"):
		return kindTemp
	}
	num, ext, ok := strings.Cut(name, ".")
	if !ok || num == "" || strings.Trim(num, "0123456789") != "" {
		return kindOther
	}
	switch ext {
	case "log":
		return kindLog
	case "sst":
		return kindTable
	case "blob":
		return kindBlob
	}
	return kindOther
}

// pebbleFile reports whether a kind is one of Pebble's own files.
func (k fileKind) pebbleFile() bool {
	switch k {
	case kindLog, kindTable, kindBlob, kindManifest, kindOptions, kindMarker:
		return true
	}
	return false
}

// dirState is what preflight found.
type dirState struct {
	exists   bool     // the directory holds a store
	sealed   bool     // it holds a seal from a clean close
	manifest string   // the MANIFEST the marker names
	options  string   // the newest OPTIONS file
	logs     []string // the WAL files, in number order
}

// preflight inspects dir before Pebble may touch it. A directory with none
// of Pebble's files is new (it may hold sub-directories and lock files but
// no other file); one with any of them must be a complete store: a manifest
// marker naming a MANIFEST that exists, a format-version marker and an
// OPTIONS file. Anything else is refused naming the file, so Pebble never
// re-initialises a damaged store over its tables.
func preflight(dir string) (dirState, error) {
	var st dirState
	entries, err := os.ReadDir(dir)
	if err != nil {
		return st, fmt.Errorf("open store %s: %w", dir, err)
	}
	var (
		store, stray           []string
		manifestMarker, format []string
		options                int
	)
	for _, e := range entries {
		name := e.Name()
		k := classify(name)
		if e.IsDir() {
			continue
		}
		switch {
		case k.pebbleFile():
			store = append(store, name)
		case k == kindOther:
			stray = append(stray, name)
		}
		switch k {
		case kindLog:
			st.logs = append(st.logs, name)
		case kindOptions:
			options++
			if name > st.options {
				st.options = name
			}
		case kindMarker:
			switch {
			case strings.HasPrefix(name, "marker.manifest."):
				manifestMarker = append(manifestMarker, name)
			case strings.HasPrefix(name, "marker.format-version."):
				format = append(format, name)
			}
		case kindSeal:
			st.sealed = true
		}
	}
	if len(store) == 0 {
		if len(stray) > 0 {
			return st, fmt.Errorf("open store %s: the directory is not empty and holds no agentc store (found %s): point --data at an empty directory or at an agentc store", dir, stray[0])
		}
		if st.sealed {
			return st, damage(dir, sealFile, "the store was closed cleanly but its files are gone", nil)
		}
		return st, nil
	}
	st.exists = true
	slices.Sort(st.logs)
	if len(manifestMarker) == 0 {
		return st, damage(dir, "marker.manifest.*", "the manifest marker is missing, so the engine would start an empty store and delete the tables", nil)
	}
	slices.Sort(manifestMarker)
	last := manifestMarker[len(manifestMarker)-1]
	parts := strings.SplitN(last, ".", 4)
	if len(parts) != 4 || !strings.HasPrefix(parts[3], "MANIFEST-") {
		return st, damage(dir, last, "the manifest marker does not name a MANIFEST", nil)
	}
	st.manifest = parts[3]
	if fi, err := os.Stat(filepath.Join(dir, st.manifest)); err != nil {
		return st, damage(dir, st.manifest, "the MANIFEST named by "+last+" is missing", err)
	} else if fi.Size() == 0 {
		return st, damage(dir, st.manifest, "the MANIFEST is empty", nil)
	}
	if len(format) == 0 {
		return st, damage(dir, "marker.format-version.*", "the format-version marker is missing", nil)
	}
	if options == 0 {
		return st, damage(dir, "OPTIONS-*", "the OPTIONS file is missing", nil)
	}
	return st, nil
}

// sealEntry is one line of the seal: name, size, CRC32C (-1: not hashed).
type sealEntry struct {
	name string
	size int64
	sum  int64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// hashed reports whether the seal keeps a checksum of a file of kind k:
// the small files whose damage Pebble could mistake for a torn write.
// Tables carry block checksums of their own.
func (k fileKind) hashed() bool {
	return k == kindLog || k == kindManifest || k == kindOptions
}

func fileSum(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, f); err != nil {
		return 0, err
	}
	return int64(h.Sum32()), nil
}

// files lists the entries of dir that keep accepts.
func files(dir string, keep func(os.DirEntry) bool) ([]os.DirEntry, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := es[:0]
	for _, e := range es {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// sealEntries lists the store files of dir as the seal records them.
func sealEntries(dir string) ([]sealEntry, error) {
	entries, err := files(dir, func(e os.DirEntry) bool { return !e.IsDir() && classify(e.Name()).pebbleFile() })
	if err != nil {
		return nil, err
	}
	out := make([]sealEntry, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			return nil, err
		}
		se := sealEntry{name: e.Name(), size: fi.Size(), sum: -1}
		if classify(e.Name()).hashed() {
			if se.sum, err = fileSum(filepath.Join(dir, e.Name())); err != nil {
				return nil, err
			}
		}
		out = append(out, se)
	}
	return out, nil
}

const sealHeader = "agentc store seal v1"

// writeSeal records the closed store's files, synced, atomically.
func writeSeal(dir string) error {
	es, err := sealEntries(dir)
	if err != nil {
		return fmt.Errorf("seal store %s: %w", dir, err)
	}
	var b bytes.Buffer
	b.WriteString(sealHeader + "\n")
	for _, e := range es {
		fmt.Fprintf(&b, "%s %d %d\n", e.name, e.size, e.sum)
	}
	fmt.Fprintf(&b, "end %d\n", crc32.Checksum(b.Bytes(), castagnoli))
	tmp := filepath.Join(dir, sealFile+".tmp")
	if err := writeSynced(tmp, b.Bytes()); err != nil {
		return fmt.Errorf("seal store %s: %w", dir, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, sealFile)); err != nil {
		return fmt.Errorf("seal store %s: %w", dir, err)
	}
	return syncDir(dir)
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Sync(), f.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// readSeal parses the seal; a seal that fails its own checksum is damage.
func readSeal(dir string) ([]sealEntry, error) {
	data, err := os.ReadFile(filepath.Join(dir, sealFile))
	if err != nil {
		return nil, err
	}
	bad := func(why string) ([]sealEntry, error) {
		return nil, damage(dir, sealFile, why, nil)
	}
	i := bytes.LastIndex(data, []byte("end "))
	if i < 0 || !bytes.HasPrefix(data, []byte(sealHeader+"\n")) {
		return bad("the seal is not readable")
	}
	sum, err := strconv.ParseUint(strings.TrimSpace(string(data[i+4:])), 10, 32)
	if err != nil || uint32(sum) != crc32.Checksum(data[:i], castagnoli) {
		return bad("the seal fails its checksum")
	}
	var out []sealEntry
	sc := bufio.NewScanner(bytes.NewReader(data[len(sealHeader)+1 : i]))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			return bad("the seal is not readable")
		}
		size, err1 := strconv.ParseInt(f[1], 10, 64)
		s, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return bad("the seal is not readable")
		}
		out = append(out, sealEntry{name: f[0], size: size, sum: s})
	}
	return out, nil
}

// verifySeal compares dir with its seal: every sealed file must be there
// with its size and checksum. Files added since are not the seal's concern
// (Pebble adds none while closed).
func verifySeal(dir string) error {
	sealed, err := readSeal(dir)
	if err != nil {
		return err
	}
	for _, e := range sealed {
		path := filepath.Join(dir, e.name)
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return damage(dir, e.name, "the file is missing (it was there when the store was closed)", nil)
		}
		if err != nil {
			return fmt.Errorf("open store %s: %w", dir, err)
		}
		if fi.Size() != e.size {
			return damage(dir, e.name, fmt.Sprintf("the file is %d bytes, it was %d when the store was closed", fi.Size(), e.size), nil)
		}
		if e.sum >= 0 {
			sum, err := fileSum(path)
			if err != nil {
				return fmt.Errorf("open store %s: %w", dir, err)
			}
			if sum != e.sum {
				return damage(dir, e.name, "the file changed since the store was closed (checksum mismatch)", nil)
			}
		}
	}
	return nil
}

// breakSeal removes the seal and the WAL mark, durably, before Pebble may
// write: they describe the files as they are before the engine opens them.
func breakSeal(dir string) error {
	removed := false
	for _, name := range []string{sealFile, markFile} {
		err := os.Remove(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("open store %s: %w", dir, err)
		}
		removed = true
	}
	if !removed {
		return nil
	}
	return syncDir(dir)
}
