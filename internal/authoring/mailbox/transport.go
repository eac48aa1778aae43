package mailbox

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Transport limits (docs/mailbox.md, "Transport").
const (
	RequestTimeout  = 10 * time.Second
	MaxResponseBody = 64 << 10
)

// ErrFatal is wrapped by responses that end the client at once: 401 (the
// credential was rejected), 404 (unknown job), 409 (already claimed) and 410
// (expired) (docs/mailbox.md, "Ending").
var ErrFatal = errors.New("the mailbox ended the session")

// ErrBadResponse is wrapped by a response the client does not accept (no
// Cache-Control: no-store, a redirect, a non-object or oversized body, an
// unexpected status, or a request that did not complete). The client stops
// after [MaxBadResponses] in a row.
var ErrBadResponse = errors.New("bad_response")

func badf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadResponse, fmt.Sprintf(format, a...))
}

// transport posts JSON objects to one job's runner endpoints.
type transport struct {
	origin    string
	pack      string
	client    *http.Client
	userAgent string
}

func newHTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		// Redirects are refused, not followed: the 3xx comes back to post,
		// which counts it as a bad response.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{
			Proxy:                  http.ProxyFromEnvironment,
			DialContext:            (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:    timeout,
			ResponseHeaderTimeout:  timeout,
			MaxResponseHeaderBytes: 32 << 10,
			DisableCompression:     true,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           2,
			IdleConnTimeout:        60 * time.Second,
		},
	}
}

// reply is an accepted response: its status and its JSON object (nil for 204).
type reply struct {
	status int
	body   map[string]json.RawMessage
	raw    []byte
}

// post sends body to /j/{pack}/runner/{action} and checks the response.
// lease is the zero Secret for claim. expect lists the accepted statuses;
// 204 is accepted only when listed. The returned error wraps [ErrFatal],
// [ErrBadResponse], or the context's error; its text never holds a secret,
// a URL or server text.
func (t *transport) post(ctx context.Context, action string, body any, lease Secret, expect ...int) (reply, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return reply{}, fmt.Errorf("encoding the %s request: %w", action, err)
	}
	u := t.origin + "/j/" + t.pack + "/runner/" + action
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(payload))
	if err != nil {
		return reply{}, fmt.Errorf("building the %s request failed", action)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Cache-Control", "no-store")
	if t.userAgent != "" {
		req.Header.Set("User-Agent", t.userAgent)
	}
	if !lease.IsZero() {
		req.Header.Set("Authorization", "Bearer "+lease.reveal())
	}
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return reply{}, ctx.Err()
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return reply{}, badf("the %s request timed out", action)
		}
		// Never err.Error(): it holds the URL.
		return reply{}, badf("the %s request did not complete", action)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return reply{}, fmt.Errorf("%w: the mailbox rejected the credential (HTTP 401)", ErrFatal)
	case http.StatusNotFound:
		return reply{}, fmt.Errorf("%w: the mailbox does not know this job (HTTP 404)", ErrFatal)
	case http.StatusConflict:
		return reply{}, fmt.Errorf("%w: this runner link was already claimed (HTTP 409); ask for a new link", ErrFatal)
	case http.StatusGone:
		return reply{}, fmt.Errorf("%w: this job has expired (HTTP 410); ask for a new link", ErrFatal)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return reply{}, badf("the %s response was a redirect (HTTP %d), which is refused", action, resp.StatusCode)
	}
	if !noStore(resp.Header) {
		return reply{}, badf("the %s response was not marked Cache-Control: no-store", action)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return reply{}, ctx.Err()
		}
		return reply{}, badf("the %s response body could not be read", action)
	}
	if len(raw) > MaxResponseBody {
		return reply{}, badf("the %s response body is larger than 64 KiB", action)
	}
	ok := false
	for _, s := range expect {
		ok = ok || s == resp.StatusCode
	}
	if !ok {
		return reply{}, badf("the %s response had HTTP status %d", action, resp.StatusCode)
	}
	if resp.StatusCode == http.StatusNoContent {
		if len(raw) != 0 {
			return reply{}, badf("the %s response was 204 with a body", action)
		}
		return reply{status: resp.StatusCode}, nil
	}
	obj, err := decodeObject(raw)
	if err != nil {
		return reply{}, badf("the %s response body was not a JSON object", action)
	}
	return reply{status: resp.StatusCode, body: obj, raw: raw}, nil
}

// noStore reports whether the response carries exactly Cache-Control:
// no-store (case-insensitive, surrounding spaces ignored), as both Python
// sources require.
func noStore(h http.Header) bool {
	v := h.Values("Cache-Control")
	return len(v) == 1 && strings.EqualFold(strings.TrimSpace(v[0]), "no-store")
}

// bodyOptions are the rules of every JSON body the mailbox sends
// (docs/mailbox.md, "Transport"), read by the project's one strict core
// (internal/util/pyjson) in one pass: one object and nothing after it but
// whitespace, no duplicate key at any depth (a parser differential on
// oauth_sub_sha256 or tool must not exist between the service and this
// client), nesting at most 64 deep, valid UTF-8 with no lone surrogate
// escape (which encoding/json used to read as U+FFFD), no byte order mark.
// Numbers are kept as their tokens: nothing here needs their value beyond
// what each field's reader checks.
var bodyOptions = pyjson.Options{MaxDepth: 64, Floats: pyjson.FloatRefuse}

var errNotObject = errors.New("not a JSON object")

// decodeObject decodes one JSON object under [bodyOptions] into its
// members' raw values (sub-slices of raw, capacity clipped). The error names
// the problem and a byte offset, never content.
func decodeObject(raw []byte) (map[string]json.RawMessage, error) {
	d, err := pyjson.Parse(raw, bodyOptions)
	if err != nil {
		return nil, err
	}
	root := d.Root()
	if d.Kind(root) != pyjson.Object {
		return nil, errNotObject
	}
	obj := make(map[string]json.RawMessage, d.Len(root))
	for k, v := range d.Members(root) {
		obj[d.Str(k)] = slices.Clip(d.Raw(v))
	}
	return obj, nil
}
