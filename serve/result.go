package serve

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// failure is the body of the failure envelope F (§3.1).
type failure struct {
	Error failureBody `json:"error"`
}

type failureBody struct {
	Code     Code   `json:"code"`
	Message  string `json:"message"`
	Recovery string `json:"recovery"`
}

func fail(code Code) *failure {
	c, ok := copyFor[code]
	if !ok {
		panic("serve: no copy for code " + string(code))
	}
	return &failure{failureBody{code, c.message, c.recovery}}
}

func failAdmission(reason string) *failure {
	f := fail(CodeAdmissionRequired)
	f.Error.Message = admissionMessage(reason)
	return f
}

// encodeJSON marshals v without HTML escaping, compact or with 2-space
// indentation.
func encodeJSON(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// resolveSchema resolves a schema literal for validation. A schema that does
// not resolve is a programmer error.
func resolveSchema(raw json.RawMessage) *jsonschema.Resolved {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		panic(fmt.Sprintf("serve: schema does not parse: %v", err))
	}
	r, err := s.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("serve: schema does not resolve: %v", err))
	}
	return r
}

// validates reports whether the JSON document data validates against r.
func validates(r *jsonschema.Resolved, data []byte) bool {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return false
	}
	return r.Validate(v) == nil
}

// toolResult builds the four-part result of §3.1 from a body. The body is
// either a success value or a *failure.
func toolResult(compactJSON, indented []byte, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(indented)}},
		StructuredContent: json.RawMessage(compactJSON),
		IsError:           isError,
	}
}

// failureResult is the result for a failure envelope, with no tool schema
// check (used for unknown run-shaped names, which have no tool).
func failureResult(f *failure) *mcp.CallToolResult {
	c, _ := encodeJSON(f, false)
	i, _ := encodeJSON(f, true)
	return toolResult(c, i, true)
}
