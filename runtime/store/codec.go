package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// CodecVersion is the value codec this build writes; it reads versions 1
// through CodecVersion.
//
// Every stored value is framed:
//
//	value   = version payload crc
//	version = 1 byte (CodecVersion)
//	payload = the record, encoded by the backend for that version
//	crc     = CRC32C (Castagnoli) of version and payload, 4 bytes big-endian
//
// so a flipped bit or a truncated value is detected before anything decodes
// the payload.
//
// Version 2 appends a run's usage to the run record; every other record
// is as in version 1, and a version 1 run record reads as no usage.
// Version 3 appends the run's first event (Run.FirstEvent) after the
// usage; a version 2 run record reads as an unknown one (0).
const CodecVersion = 3

// frameOverhead is the bytes a frame adds to its payload.
const frameOverhead = 1 + 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BeginValue returns an empty frame with room for n payload bytes: append the
// payload to it, then call EndValue.
func BeginValue(n int) []byte {
	v := make([]byte, 1, n+frameOverhead)
	v[0] = CodecVersion
	return v
}

// EndValue appends the checksum to a frame started by BeginValue.
func EndValue(v []byte) []byte {
	return binary.BigEndian.AppendUint32(v, crc32.Checksum(v, castagnoli))
}

// Frame returns payload framed as a value.
func Frame(payload []byte) []byte {
	return EndValue(append(BeginValue(len(payload)), payload...))
}

// Payload verifies the frame v stored under key and returns its payload,
// which aliases v. A short value or a bad checksum is ErrCorrupt and a version
// this build does not read is ErrLayoutVersion; both messages name the key.
func Payload(key, v []byte) ([]byte, error) {
	if len(v) < frameOverhead {
		return nil, fmt.Errorf("value of %s: %d bytes, shorter than a frame: %w", FormatKey(key), len(v), ErrCorrupt)
	}
	body, sum := v[:len(v)-4], binary.BigEndian.Uint32(v[len(v)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("value of %s: checksum mismatch: %w", FormatKey(key), ErrCorrupt)
	}
	switch ver := body[0]; {
	case ver == 0:
		return nil, fmt.Errorf("value of %s: codec version 0: %w", FormatKey(key), ErrCorrupt)
	case ver > CodecVersion:
		return nil, fmt.Errorf("value of %s: codec version %d, this build reads up to %d (written by a newer agentc): %w",
			FormatKey(key), ver, CodecVersion, ErrLayoutVersion)
	}
	return body[1:], nil
}

// CorruptRecord reports a value whose frame is sound but whose payload does
// not decode as the record its key says it holds.
func CorruptRecord(key []byte, why string) error {
	return fmt.Errorf("value of %s: %s: %w", FormatKey(key), why, ErrCorrupt)
}
