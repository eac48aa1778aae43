package flowhelper

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// decodeObject parses one JSON object, refusing duplicate keys and
// trailing data.
func decodeObject(b []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	obj := map[string]json.RawMessage{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := kt.(string)
		if !ok {
			return nil, errors.New("bad key")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := obj[k]; dup {
			return nil, fmt.Errorf("duplicate key %q", k)
		}
		obj[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("trailing data")
	}
	return obj, nil
}

func keysExactly(obj map[string]json.RawMessage, keys ...string) bool {
	if len(obj) != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			return false
		}
	}
	return true
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

func jsonStr(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// decodeClosed decodes a result object that must have exactly keys, into
// v (a struct whose fields are pointers, so a null or missing value shows).
// The JSON types are checked by json.Unmarshal; null handling is the
// caller's (pointer fields stay nil on null).
func decodeClosed(raw json.RawMessage, v any, keys ...string) error {
	obj, err := decodeObject(raw)
	if err != nil {
		return err
	}
	if !keysExactly(obj, keys...) {
		got := make([]string, 0, len(obj))
		for k := range obj {
			got = append(got, k)
		}
		sort.Strings(got)
		return fmt.Errorf("keys %v, want %v", got, keys)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
