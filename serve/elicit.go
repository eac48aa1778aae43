package serve

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress messages (docs/attended.md "Dispatch", "Elicitation"): while
// the decision is dispatched, and while the form waits for the person.
const (
	progressDispatched = "Attended action in progress."
	progressConfirm    = "Waiting for the local operator's confirmation."
)

// attendedProgress sends msg every 10 s until stopped, when the request
// carries a progress token.
func attendedProgress(ctx context.Context, req *mcp.CallToolRequest, msg string) func() {
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	if token == nil || req.Session == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(orDefault(testOnlyProgressEvery, attendedProgressEvery))
		defer tick.Stop()
		n := 0.0
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				n++
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: msg})
			}
		}
	}()
	return func() { close(done) }
}

// attendedProgressEvery is the progress interval of a running attended
// action; testOnlyProgressEvery, when positive, replaces it.
const attendedProgressEvery = 10 * time.Second

var testOnlyProgressEvery time.Duration

// orDefault is d when a test set it (positive), else def.
func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// elicitSchema is the requested schema of the confirmation form.
var elicitSchema = json.RawMessage(`{"type":"object","properties":{"confirmed":{"type":"boolean","title":"I confirm this attended action"}},"required":["confirmed"]}`)

// elicitTimeout bounds the confirmation form; testOnlyElicitTimeout, when
// positive, replaces it.
const elicitTimeout = 120 * time.Second

var testOnlyElicitTimeout time.Duration

const inputKey = "operator_confirmation"

// formCapable is the capability rule: the client declared form
// elicitation (or elicitation without a mode, which means form).
func formCapable(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	return caps.Elicitation.Form != nil || caps.Elicitation.URL == nil
}

// asksInputRequests reports a session of the 2026-07-28 protocol, which
// confirms through an input request answered by a retried call instead of
// elicitation/create.
func asksInputRequests(req *mcp.CallToolRequest) bool {
	if req == nil || req.Session == nil {
		return false
	}
	p := req.Session.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

func elicitParams(message string) *mcp.ElicitParams {
	var schema any
	_ = json.Unmarshal(elicitSchema, &schema)
	return &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: schema}
}

// accepted is the accept rule: action accept and confirmed exactly true.
func accepted(r *mcp.ElicitResult) bool {
	if r == nil || r.Action != "accept" || r.Content == nil {
		return false
	}
	v, ok := r.Content["confirmed"].(bool)
	return ok && v
}

// confirmer asks the local operator to confirm an attended action or an
// admit in a form (docs/attended.md "Elicitation"), and keeps the signed
// request states of the 2026-07-28 variant.
type confirmer struct {
	states stateKeeper

	// stopping is closed when the server begins to stop (stop): every
	// form still waiting is withdrawn and its call answered
	// server_stopping (docs/mcp.md "Shutdown").
	stopOnce  sync.Once
	closeOnce sync.Once
	stopping  chan struct{}
}

func (k *confirmer) stopCh() chan struct{} {
	k.stopOnce.Do(func() { k.stopping = make(chan struct{}) })
	return k.stopping
}

// stop withdraws every pending and future form. Safe to call more than
// once.
func (k *confirmer) stop() {
	ch := k.stopCh()
	k.closeOnce.Do(func() { close(ch) })
}

func (k *confirmer) stopped() bool {
	select {
	case <-k.stopCh():
		return true
	default:
		return false
	}
}

// ask asks the operator to confirm tool's call c with message. It returns
// (nil, nil) when the operator confirmed, a failure, or (for a 2026-07-28
// session's first call) the raw input-required result. id and digest bind
// the request state to the item decided on ("" for admit).
func (k *confirmer) ask(ctx context.Context, c *toolCall, tool, message, id, digest string) (any, *failure) {
	if !formCapable(c.req.ClientCapabilities()) {
		return nil, fail(CodeElicitationUnsupported)
	}
	if asksInputRequests(c.req) {
		return k.inputRequired(c, tool, message, id, digest)
	}
	// 2025 eras: a real elicitation/create; inputResponses are ignored.
	// Progress keeps a TS-SDK client's 60 s tools/call timeout from firing
	// while the person thinks.
	if k.stopped() {
		return nil, fail(CodeServerStopping)
	}
	ectx, cancel := context.WithTimeout(ctx, orDefault(testOnlyElicitTimeout, elicitTimeout))
	defer cancel()
	go func() {
		select {
		case <-k.stopCh():
			cancel() // withdraws the form: Elicit returns at once
		case <-ectx.Done():
		}
	}()
	stop := attendedProgress(ectx, c.req, progressConfirm)
	res, err := c.req.Session.Elicit(ectx, elicitParams(message))
	stop()
	// A confirmation that arrives as the server stops is not acted on
	// either: nothing is dispatched once stopping has begun.
	if k.stopped() {
		return nil, fail(CodeServerStopping)
	}
	if err != nil || !accepted(res) {
		return nil, fail(CodeOperatorDeclined)
	}
	return nil, nil
}

// rawResult is a handler body the tool middleware passes through
// unchanged: the 2026-07-28 input-required result, exempt from the
// structuredContent envelope.
type rawResult struct{ res *mcp.CallToolResult }

// requestState is the signed RequestState payload.
type requestState struct {
	Tool       string `json:"tool"`
	ArgsDigest string `json:"args_digest"`
	Attention  string `json:"attention_id"`
	Capability string `json:"capability_digest"`
	Nonce      string `json:"nonce"`
	Exp        int64  `json:"exp"`
}

// argsDigest binds the state to the retried arguments.
func argsDigest(args map[string]any) string {
	b, _ := json.Marshal(args) // map keys are sorted
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

type stateKeeper struct {
	once sync.Once
	key  []byte
	mu   sync.Mutex
	used map[string]int64 // nonce -> exp
}

func (k *stateKeeper) secret() []byte {
	k.once.Do(func() {
		k.key = make([]byte, 32)
		_, _ = rand.Read(k.key)
		k.used = map[string]int64{}
	})
	return k.key
}

func (k *stateKeeper) sign(st requestState) string {
	payload, _ := json.Marshal(st)
	m := hmac.New(sha256.New, k.secret())
	m.Write(payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify checks the MAC, expiry and single use; it consumes the nonce.
func (k *stateKeeper) verify(s string, now time.Time) (requestState, bool) {
	var st requestState
	p, sig, ok := bytes.Cut([]byte(s), []byte("."))
	if !ok {
		return st, false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(string(p))
	mac, err2 := base64.RawURLEncoding.DecodeString(string(sig))
	if err1 != nil || err2 != nil {
		return st, false
	}
	m := hmac.New(sha256.New, k.secret())
	m.Write(payload)
	if !hmac.Equal(m.Sum(nil), mac) || json.Unmarshal(payload, &st) != nil || now.Unix() > st.Exp {
		return st, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for n, exp := range k.used {
		if now.Unix() > exp {
			delete(k.used, n)
		}
	}
	if _, seen := k.used[st.Nonce]; seen {
		return st, false
	}
	k.used[st.Nonce] = st.Exp
	return st, true
}

// inputRequired is the 2026-07-28 confirmation: the first call answers
// with an input request and a signed, single-use request state bound to
// the tool, the arguments and the item; the retry carries the operator's
// answer.
func (k *confirmer) inputRequired(c *toolCall, tool, message, id, digest string) (any, *failure) {
	now := time.Now()
	p := c.req.Params
	if p.RequestState == "" {
		nonce := make([]byte, 16)
		_, _ = rand.Read(nonce)
		st := requestState{Tool: tool, ArgsDigest: argsDigest(c.args), Attention: id, Capability: digest,
			Nonce: hex.EncodeToString(nonce), Exp: now.Add(10 * time.Minute).Unix()}
		return rawResult{&mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{inputKey: elicitParams(message)},
			RequestState:  k.states.sign(st),
		}}, nil
	}
	st, ok := k.states.verify(p.RequestState, now)
	if !ok || st.Tool != tool || st.ArgsDigest != argsDigest(c.args) || st.Attention != id || st.Capability != digest {
		return nil, fail(CodeOperatorDeclined)
	}
	r, ok := p.InputResponses[inputKey].(*mcp.ElicitResult)
	if !ok || !accepted(r) {
		return nil, fail(CodeOperatorDeclined)
	}
	return nil, nil
}
