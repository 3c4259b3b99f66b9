package pebble

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/record"
)

// Pebble's WAL wire format (record package, format ≥ FormatWALSyncChunks):
// 32 KiB blocks of chunks; a chunk header is checksum (4, masked CRC32C of
// everything after the length) · length (2) · encoding (1) · log number (4)
// and, for WAL-sync chunks, the offset the writer had synced when it wrote
// the chunk (8). A closed log ends with an EOF trailer: a recyclable chunk
// carrying the next log number.
//
// Pebble tells a torn tail from damage by reading ahead for a chunk whose
// synced offset lies past the bad chunk, but only in the blocks after the
// bad one; damage in a log's last block (the whole log, for a small store)
// reads as a torn tail and the records after it are dropped. walDamage does
// the same read-ahead over every byte after the bad chunk.
const (
	walBlockSize      = 32 * 1024
	walLegacyHeader   = 7
	walRecycledHeader = 11
	walSyncHeader     = 19
)

func walChecksum(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// walLogNum parses the number of a WAL file name.
func walLogNum(name string) (uint32, bool) {
	num, _, _ := strings.Cut(name, ".")
	n, err := strconv.ParseUint(num, 10, 64)
	return uint32(n), err == nil
}

// chunkAt parses a chunk header at off in data and reports whether a valid
// chunk of log num starts there: header and payload inside one block,
// checksum matching. It returns the chunk's encoding, its end and, for a
// WAL-sync chunk, its synced offset.
func chunkAt(data []byte, off int, num uint32) (enc byte, end int, synced uint64, ok bool) {
	if off+walLegacyHeader > len(data) {
		return 0, 0, 0, false
	}
	enc = data[off+6]
	if isTrailer(data, off, num) {
		return enc, off + walRecycledHeader, 0, true
	}
	var hdr int
	switch {
	case enc >= 1 && enc <= 4:
		hdr = walLegacyHeader
	case enc >= 5 && enc <= 8:
		hdr = walRecycledHeader
	case enc >= 9 && enc <= 12:
		hdr = walSyncHeader
	default:
		return 0, 0, 0, false
	}
	blockEnd := (off/walBlockSize + 1) * walBlockSize
	if off+hdr > len(data) || off+hdr > blockEnd {
		return 0, 0, 0, false
	}
	length := int(binary.LittleEndian.Uint16(data[off+4:]))
	end = off + hdr + length
	if end > len(data) || end > blockEnd {
		return 0, 0, 0, false
	}
	if hdr > walLegacyHeader {
		ln := binary.LittleEndian.Uint32(data[off+7:])
		if ln != num {
			return 0, 0, 0, false
		}
	}
	if walChecksum(data[off+6:end]) != binary.LittleEndian.Uint32(data[off:]) {
		return 0, 0, 0, false
	}
	if hdr == walSyncHeader {
		synced = binary.LittleEndian.Uint64(data[off+11:])
	}
	return enc, end, synced, true
}

// walFinding is what scanning one WAL found.
type walFinding struct {
	end     int  // offset after the last valid chunk before any bad one
	bad     int  // offset of the first bad chunk, -1 if none
	damaged bool // a later chunk proves the bad one was durable
	why     string
}

// scanWAL reads one WAL file.
func scanWAL(data []byte, num uint32) walFinding {
	f := walFinding{bad: -1}
	off := 0
	for off < len(data) {
		rest := walBlockSize - off%walBlockSize
		if rest < walSyncHeader && allZero(data[off:min(off+rest, len(data))]) {
			off += rest // block padding
			continue
		}
		_, end, _, ok := chunkAt(data, off, num)
		if !ok {
			if allZero(data[off:min(off+walSyncHeader, len(data))]) && allZero(data[off:]) {
				f.end = off // preallocated or zeroed to the end: a clean or torn end
				return f
			}
			f.bad = off
			break
		}
		if isTrailer(data, off, num) {
			f.end = end // EOF trailer: the log was closed
			return f
		}
		off = end
		f.end = off
	}
	if f.bad < 0 {
		return f
	}
	// Read ahead: a valid chunk of this log after the bad one whose synced
	// offset covers it, or the log's EOF trailer, means the bad bytes had
	// been synced — damage, not a torn write.
	for p := f.bad + 1; p+walLegacyHeader <= len(data); p++ {
		e := data[p+6]
		if e < 5 || e > 12 {
			continue
		}
		_, _, synced, ok := chunkAt(data, p, num)
		if !ok {
			continue
		}
		if isTrailer(data, p, num) {
			f.damaged = true
			f.why = fmt.Sprintf("bad record at offset %d of a log that was closed cleanly (EOF trailer at %d)", f.bad, p)
			return f
		}
		if synced > uint64(f.bad) {
			f.damaged = true
			f.why = fmt.Sprintf("bad record at offset %d, but the record at offset %d says the log was synced through %d", f.bad, p, synced)
			return f
		}
	}
	return f
}

// isTrailer reports whether the EOF trailer a closed log ends with starts at
// off: a recyclable header with no checksum, no payload and the next log's
// number.
func isTrailer(data []byte, off int, num uint32) bool {
	return off+walRecycledHeader <= len(data) && off/walBlockSize == (off+walRecycledHeader-1)/walBlockSize &&
		binary.LittleEndian.Uint32(data[off:]) == 0 && binary.LittleEndian.Uint16(data[off+4:]) == 0 &&
		data[off+6] == 5 && binary.LittleEndian.Uint32(data[off+7:]) == num+1
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// checkWALs scans the WALs of dir and refuses the first one with damage that
// is not a torn tail.
func checkWALs(dir string, logs []string) error {
	for _, name := range logs {
		num, ok := walLogNum(name)
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("open store %s: %w", dir, err)
		}
		if f := scanWAL(data, num); f.damaged {
			return damage(dir, name, "committed records would be dropped: "+f.why, nil)
		}
	}
	return nil
}

// manifestDamage reads every record of a MANIFEST. The engine stops at the
// first invalid record and drops the edits after it without a word; a
// genuinely torn edit (a crash while the engine wrote it) is harmless, but
// one cut or damaged after it was synced loses the tables or WAL deletions
// it recorded, so agentc refuses either and repair cuts it explicitly. It
// returns the offset of the bad record, or -1.
func manifestDamage(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	r := record.NewReader(f, 0)
	for {
		off := r.Offset()
		rec, err := r.Next()
		if err == nil {
			_, err = io.Copy(io.Discard, rec)
		}
		if errors.Is(err, io.EOF) {
			return -1, nil
		}
		if err != nil {
			if record.IsInvalidRecord(err) || errors.Is(err, io.ErrUnexpectedEOF) {
				return off, nil
			}
			return -1, err
		}
	}
}

// checkManifest refuses a MANIFEST with a bad record.
func checkManifest(dir, name string) error {
	off, err := manifestDamage(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("open store %s: %w", dir, err)
	}
	if off >= 0 {
		return damage(dir, name, fmt.Sprintf("the record at offset %d is damaged or cut: the engine would drop the edits from there on (the tables they add, the WALs they retire)", off), nil)
	}
	return nil
}
