package types

import (
	"bytes"
	"encoding/json"
	"errors"
)

// DecodeAny decodes exactly one JSON value into Go's generic form (maps,
// slices, strings, bools, nil), keeping numbers exact as json.Number. Data
// after the value is an error. It serves the places that read JSON whose
// type is not known in advance: MCP schemas, scripted tool inputs and tool
// responses to be projected.
func DecodeAny(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}
