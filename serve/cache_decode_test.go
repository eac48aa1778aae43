package serve

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func sampleCache() cacheFile {
	two := 2
	return cacheFile{V: cacheVersion, Root: "/r/bündles", KeySalt: "00ff", KeyMAC: "ab", Bundles: []cachedBundle{
		{Dir: "/r/bündles/a \"q\"\n", Sealed: true, Files: ".\nmanifest.json\ntemplates\ntemplates/x.enc", Ident: strings.Repeat("e", 64),
			BaseID: "workflow_" + strings.Repeat("0", 24), Available: true, Params: []string{"note", "naïve\u2028"}, ParamTypes: []string{"string", "date"}, StepCount: 10,
			SchemaVersion: &two, ContentDigest: strings.Repeat("c", 64), Encrypted: true},
		{Dir: "/r/b", Files: ".", Ident: "i", BaseID: "workflow_" + strings.Repeat("1", 24), Reason: "integrity_failed"},
		{Dir: "/r/c", Files: ".", Ident: "i", BaseID: "workflow_" + strings.Repeat("2", 24), Params: []string{}, ParamTypes: []string{}, StepCount: -1},
	}}
}

// TestDecodeCacheMatchesEncoder: what store writes (encoding/json)
// decodes to the same value as encoding/json decodes it.
func TestDecodeCacheMatchesEncoder(t *testing.T) {
	for _, c := range []cacheFile{sampleCache(), {V: cacheVersion, Root: "/", Bundles: []cachedBundle{}}} {
		data, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var want, got cacheFile
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		if !decodeCache(data, &got) {
			t.Fatalf("decodeCache refused %s", data)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %+v, encoding/json gives %+v", got, want)
		}
	}
}

// TestDecodeCacheRefuses: a file of any other shape is not trusted at all.
func TestDecodeCacheRefuses(t *testing.T) {
	data, err := json.Marshal(sampleCache())
	if err != nil {
		t.Fatal(err)
	}
	good := string(data)
	bad := map[string]string{
		"empty":                 "",
		"truncated":             good[:len(good)-1],
		"trailing garbage":      good + "x",
		"not an object":         "[]",
		"unknown member":        strings.Replace(good, `{"v":`, `{"x":1,"v":`, 1),
		"duplicate key":         strings.Replace(good, `{"v":`, `{"v":5,"v":`, 1),
		"v missing":             strings.Replace(good, `"v":5,`, ``, 1),
		"v a float":             strings.Replace(good, `"v":5,`, `"v":5.0,`, 1),
		"v a string":            strings.Replace(good, `"v":5,`, `"v":"5",`, 1),
		"root missing":          strings.Replace(good, `"root":"/r/bündles",`, ``, 1),
		"bundles not array":     strings.Replace(good, `"bundles":[`, `"bundles":{"a":[`, 1) + "}",
		"bundle not object":     strings.Replace(good, `"bundles":[`, `"bundles":[1,`, 1),
		"bundle member unknown": strings.Replace(good, `{"dir":"/r/b",`, `{"dir":"/r/b","extra":true,`, 1),
		"dir missing":           strings.Replace(good, `"dir":"/r/b",`, ``, 1),
		"files missing":         strings.Replace(good, `"dir":"/r/b","sealed":false,"files":".",`, `"dir":"/r/b","sealed":false,`, 1),
		"sealed a string":       strings.Replace(good, `"sealed":true`, `"sealed":"true"`, 1),
		"params a string":       strings.Replace(good, `"params":["note",`, `"params":"note","p":[`, 1),
		"param not string":      strings.Replace(good, `"params":["note",`, `"params":[1,`, 1),
		"param type not string": strings.Replace(good, `"param_types":["string",`, `"param_types":[1,`, 1),
		"param types missing":   strings.Replace(good, `"param_types":["string","date"],`, ``, 1),
		"step count float":      strings.Replace(good, `"step_count":10`, `"step_count":1e1`, 1),
		"step count huge":       strings.Replace(good, `"step_count":10`, `"step_count":10000000000000000000000`, 1),
		"schema a string":       strings.Replace(good, `"schema_version":2`, `"schema_version":"2"`, 1),
		"too deep":              strings.Replace(good, `"params":["note",`, `"params":[["note"],`, 1),
		"invalid utf-8":         strings.Replace(good, "ü", "\xfc", 1),
		"BOM":                   "\ufeff" + good,
	}
	for name, doc := range bad {
		if doc == good {
			t.Fatalf("%s: the replacement did not apply", name)
		}
		var c cacheFile
		if decodeCache([]byte(doc), &c) {
			t.Errorf("%s: decoded %q", name, doc)
		}
	}
}
