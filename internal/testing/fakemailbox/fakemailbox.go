// Package fakemailbox is a scripted fake of OpenAdapt's hosted authoring
// mailbox for tests: an httptest server on loopback that answers
// /j/{pack}/runner/{claim,poll,callback,allow} from a script and records
// every request. Select it with OPENADAPT_MAILBOX_ORIGIN=[Server.Origin].
// It is test support only; production code never listens.
package fakemailbox

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Well-formed credentials and ids for scripts.
const (
	Pack   = "p.AbCdEf012345"
	Bind   = "oab_" + "Zm9vYmFyYmF6cXV4cXV1eHh5enp5MDEyMzQ1Njc4OWF" // 43 base64url characters
	Lease  = "oals_" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	SubA   = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	SubB   = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	Client = "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

// Reply is one scripted response.
type Reply struct {
	Status  int
	Body    string            // sent as is
	Header  map[string]string // replaces the defaults when set (nil: Cache-Control: no-store, JSON)
	NoStore *bool             // false: omit Cache-Control
	Block   <-chan struct{}   // when set, wait for it (or the request's end) before answering
	Arrived chan<- struct{}   // when set, closed once the request has been recorded
	Raw     string            // when set, written as the raw HTTP response on the hijacked connection
}

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	Action string // claim, poll, callback, allow, or "" for any other path
	Header http.Header
	Body   []byte
}

// JSON decodes the request body.
func (r Request) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body %q is not a JSON object: %v", r.Body, err)
	}
	return m
}

// Server is the fake mailbox.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   map[string][]Reply
	requests []Request
	// OnEmptyPoll answers a poll when the poll script is empty; the default
	// is 200 {"halted": true}.
	OnEmptyPoll Reply
}

// New starts a fake mailbox on 127.0.0.1 and closes it at test end.
func New(t testing.TB) *Server {
	s := &Server{script: map[string][]Reply{}, OnEmptyPoll: Reply{Status: 200, Body: `{"halted":true}`}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Origin is the value for OPENADAPT_MAILBOX_ORIGIN.
func (s *Server) Origin() string { return s.URL }

// Link is a well-formed runner link for this server.
func (s *Server) Link() string {
	return "openadapt://runner?pack=" + Pack + "&bind=" + Bind + "&origin=" + s.Origin()
}

// Script appends replies for an action (claim, poll, callback, allow).
func (s *Server) Script(action string, r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script[action] = append(s.script[action], r...)
}

// Poll appends 200 poll replies with each body.
func (s *Server) Poll(bodies ...string) {
	for _, b := range bodies {
		s.Script("poll", Reply{Status: 200, Body: b})
	}
}

// Requests is every request so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Of is the recorded requests of one action.
func (s *Server) Of(action string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Action == action {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	action := ""
	if rest, ok := strings.CutPrefix(r.URL.Path, "/j/"+Pack+"/runner/"); ok && !strings.Contains(rest, "/") {
		action = rest
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Action: action, Header: r.Header.Clone(), Body: body})
	var rep Reply
	switch q := s.script[action]; {
	case len(q) > 0:
		rep, s.script[action] = q[0], q[1:]
	case action == "claim":
		rep = Reply{Status: 201, Body: `{"leaseSecret":"` + Lease + `","lease_s":900}`}
	case action == "poll":
		rep = s.OnEmptyPoll
	case action == "callback" || action == "allow":
		rep = Reply{Status: 200, Body: `{"ok":true}`}
	default:
		rep = Reply{Status: 404, Body: `{"error":"not found"}`}
	}
	s.mu.Unlock()
	if rep.Arrived != nil {
		close(rep.Arrived)
	}
	if rep.Raw != "" {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = buf.WriteString(rep.Raw)
		_ = buf.Flush()
		_ = conn.Close()
		return
	}
	if rep.Block != nil {
		select {
		case <-rep.Block:
		case <-r.Context().Done():
			return
		}
	}
	h := w.Header()
	if rep.Header != nil {
		for k, v := range rep.Header {
			h.Set(k, v)
		}
	} else {
		h.Set("Content-Type", "application/json")
		if rep.NoStore == nil || *rep.NoStore {
			h.Set("Cache-Control", "no-store")
		}
	}
	w.WriteHeader(rep.Status)
	_, _ = io.WriteString(w, rep.Body)
}

// Envelope builds a command envelope as the service sends it. Fields in
// extra replace or add to the defaults; a nil value in extra deletes one.
func Envelope(id, tool string, args map[string]any, sub string, extra map[string]any) string {
	now := time.Now().UTC()
	e := map[string]any{
		"command_id":       id,
		"pack_id":          Pack,
		"tool":             tool,
		"args":             args,
		"enqueued_at":      now.Add(-time.Second).Format(time.RFC3339),
		"expires_at":       now.Add(time.Hour).Format(time.RFC3339),
		"status":           "pending",
		"result":           nil,
		"oauth_sub_sha256": sub,
		"client_id_sha256": Client,
		"client_display":   "ChatGPT",
		"schema_version":   "openadapt.authoring.command/v1",
	}
	if args == nil {
		e["args"] = map[string]any{}
	}
	for k, v := range extra {
		if v == nil {
			delete(e, k)
			continue
		}
		e[k] = v
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Command wraps an envelope as {"command": envelope}.
func Command(envelope string) string { return `{"command":` + envelope + `}` }
