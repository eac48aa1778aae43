// Package jsoncases holds the JSON test tables that internal/util/pyjson and
// bundle both run: the canonical_json_cases vector of the Flow vectors
// MANIFEST, the canonical escape table and the table of inputs every strict
// parser refuses. One table, so the two packages cannot drift apart. It
// imports neither package (pyjson's own tests import it). Tests only.
package jsoncases

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Float is one float literal Python canonicalized.
type Float struct {
	Literal   string `json:"literal"`
	Canonical string `json:"canonical"`
	IsInt     bool   `json:"is_integer_literal"`
}

// String is one string value (UTF-8, hex) and its canonical form.
type String struct {
	Hex       string `json:"value_utf8_hex"`
	Canonical string `json:"canonical"`
}

// Manifest is the canonical_json_cases entry of the vectors MANIFEST.
type Manifest struct {
	Floats   []Float  `json:"floats"`
	Strings  []String `json:"strings"`
	KeyOrder struct {
		Keys      []string `json:"input_keys_utf8_hex"`
		Canonical string   `json:"canonical"`
	} `json:"key_order"`
}

// Load reads the canonical_json_cases entry of vectorsDir/MANIFEST.json.
func Load(vectorsDir string) (Manifest, error) {
	data, err := os.ReadFile(filepath.Join(vectorsDir, "MANIFEST.json"))
	if err != nil {
		return Manifest{}, err
	}
	var m struct {
		Vectors []json.RawMessage `json:"vectors"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, err
	}
	for _, raw := range m.Vectors {
		var head struct{ Kind string }
		if err := json.Unmarshal(raw, &head); err != nil {
			return Manifest{}, err
		}
		if head.Kind == "canonical_json_cases" {
			var c Manifest
			err := json.Unmarshal(raw, &c)
			return c, err
		}
	}
	return Manifest{}, errors.New("no canonical_json_cases in MANIFEST")
}

// Value is the string case's value and the value as a JSON string literal
// (escaping what encoding/json escapes), the parser's input.
func (s String) Value() (value string, input []byte, err error) {
	value, err = hexString(s.Hex)
	if err == nil && !utf8.ValidString(value) {
		err = errors.New("string case " + s.Hex + " is not UTF-8")
	}
	if err != nil {
		return "", nil, err
	}
	input, err = json.Marshal(value)
	return value, input, err
}

// KeyOrderInput is the key-order case as a JSON object: its keys in the
// MANIFEST's order, the i-th with the value i+1.
func (m Manifest) KeyOrderInput() (string, error) {
	var obj strings.Builder
	obj.WriteString("{")
	for i, k := range m.KeyOrder.Keys {
		raw, err := hexString(k)
		if err == nil && !utf8.ValidString(raw) {
			err = errors.New("key " + k + " is not UTF-8")
		}
		if err != nil {
			return "", err
		}
		if i > 0 {
			obj.WriteString(",")
		}
		key, err := json.Marshal(raw)
		if err != nil {
			return "", err
		}
		obj.Write(key)
		obj.WriteString(":" + strconv.Itoa(i+1))
	}
	obj.WriteString("}")
	return obj.String(), nil
}

func hexString(h string) (string, error) {
	b, err := hex.DecodeString(h)
	return string(b), err
}

// Case is an input and its canonical output; Want "" means the input is
// refused.
type Case struct{ In, Want string }

// Escapes is the canonical-writer table: escapes, surrogate pairs, number
// forms (Python's float repr and int), whitespace and key order.
var Escapes = []Case{
	{`"\u2028\u2029<>&/\/"`, "\"\u2028\u2029<>&//\""},
	{`"\ud83d\ude00"`, "\"\U0001F600\""},
	{`"\u0000\u001F\u007f"`, "\"\\u0000\\u001f\x7f\""},
	{`"a\"b\\c\nd\re\tf\bg\fh"`, `"a\"b\\c\nd\re\tf\bg\fh"`},
	{`{"b":[1,2.0,-0,-0.0,true,false,null],"a":{}}`, `{"a":{},"b":[1,2.0,0,-0.0,true,false,null]}`},
	{" \t\r\n[ ] ", "[]"},
	{`123456789012345678901234567890`, `123456789012345678901234567890`},
	{`1e-99999999999999999999`, `0.0`},
	{`0e99999999999999999999`, `0.0`},
	{`1e99999999999999999999`, ``},
	{`1e-400`, `0.0`},
	{`-1e-400`, `-0.0`},
	{`{"\u0062":1,"a":2,"\ud83d\ude00":3,"\uff5e":4}`, "{\"a\":2,\"b\":1,\"\uff5e\":4,\"\U0001F600\":3}"},
	{`{"z":{"y":[{"b":1,"a":2}],"x":"é"}}`, `{"z":{"x":"é","y":[{"a":2,"b":1}]}}`},
}

// Invalid is the table of inputs a strict parser with Python's integer
// limit (4300 digits) and nesting limit maxDepth refuses, by name.
func Invalid(maxDepth int) map[string]string {
	manyKeys := `{`
	for i := range 40 {
		manyKeys += `"k` + strconv.Itoa(i) + `":1,`
	}
	manyKeys += `"k7":2}`
	return map[string]string{
		"bom":                   "\xef\xbb\xbf{}",
		"invalid utf-8":         "{\"a\":\"\xff\"}",
		"invalid utf-8 in key":  "{\"\xc3\":1}",
		"utf-8 surrogate bytes": "{\"a\":\"\xed\xa0\x80\"}",
		"overlong utf-8":        "{\"a\":\"\xc0\xaf\"}",
		"invalid utf-8 outside": "{\"a\":1}\xff",
		"lone high surrogate":   `{"a":"\ud83d"}`,
		"high then non-low":     `{"a":"\ud83d\u0041"}`,
		"high then bad escape":  `{"a":"\ud83d\u00zz"}`,
		"lone low surrogate":    `{"a":"\ude00x"}`,
		"duplicate key":         `{"a":1,"a":2}`,
		"escaped duplicate":     `{"a":1,"\u0061":2}`,
		"nested duplicate":      `{"a":{"b":1,"b":1}}`,
		"duplicate in array":    `{"a":[{"x":1,"x":1}]}`,
		"duplicate, many keys":  manyKeys,
		"NaN":                   `{"a":NaN}`,
		"Infinity":              `{"a":-Infinity}`,
		"overflow":              `{"a":1e400}`,
		"leading zero":          `{"a":01}`,
		"bare dot":              `{"a":1.}`,
		"bare exponent":         `{"a":1e}`,
		"bare minus":            `{"a":-}`,
		"plus sign":             `{"a":+1}`,
		"trailing comma":        `{"a":1,}`,
		"trailing array comma":  `[1,]`,
		"trailing data":         `{} {}`,
		"control char":          "{\"a\":\"\x01\"}",
		"raw newline":           "{\"a\":\"\n\"}",
		"bad escape":            `{"a":"\x"}`,
		"short unicode escape":  `{"a":"\u12"}`,
		"single quotes":         `{'a':1}`,
		"truncated":             `{"a":[1,2`,
		"truncated string":      `{"a":"abc`,
		"truncated escape":      `"\`,
		"missing colon":         `{"a" 1}`,
		"non-string key":        `{1:1}`,
		"bad literal":           `[tru]`,
		"empty":                 ``,
		"only whitespace":       " \n",
		"4301-digit integer":    `{"a":` + strings.Repeat("9", 4301) + `}`,
		"deep":                  strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	}
}
