package authoring

import (
	"encoding/json"
	"math"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
)

// ObserveSchema is the schema_version of the observe projection.
const ObserveSchema = "openadapt.authoring.observe/v1"

// Limits of the observe projection (docs/authoring.md, "Projections").
const (
	MaxObserveNodes = 200
	MaxObserveBytes = 32 * 1024
)

// NodeIDRE is the shape of an opaque node id: "n_" and 8 lowercase hex.
var NodeIDRE = lazyre.New(`^n_[0-9a-f]{8}$`)

// The closed enums of openadapt-types authoring-observe-v1.
var (
	backends       = set("macos", "linux", "windows", "web", "rdp", "citrix")
	coachBackends  = set("windows", "rdp", "citrix")
	driveBackends  = set("web", "macos", "linux")
	providers      = set("playwright_ax", "macos_ax", "windows_uia", "linux_atspi", "none")
	elementRoles   = set("button", "text_input", "text_static", "label", "link", "checkbox", "radio", "combobox", "list_item", "menu", "menu_item", "tab", "tree_item", "image", "icon", "toolbar", "scrollbar", "slider", "window", "dialog", "group", "table", "table_cell", "table_row", "heading", "paragraph", "unknown")
	emptyReasonStr = "empty_projection"
)

func set(v ...string) map[string]bool {
	m := make(map[string]bool, len(v))
	for _, s := range v {
		m[s] = true
	}
	return m
}

// IsCoachOnlyBackend reports whether the backend kind is coach-only
// (Windows native, RDP, Citrix): start_record, click and type refuse there.
func IsCoachOnlyBackend(kind string) bool { return coachBackends[kind] }

// Bounds are viewport-normalized coordinates in [0, 1], never backend pixels.
type Bounds struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// Window is the pinned window: its process name and bounds, never its title.
type Window struct {
	ProcessName string `json:"process_name"`
	Role        string `json:"role"`
	Bounds      Bounds `json:"bounds"`
}

// Node is one projected tree node.
type Node struct {
	NodeID       string `json:"node_id"`
	Role         string `json:"role"`
	ControlType  string `json:"control_type,omitempty"`
	ClassName    string `json:"class_name,omitempty"`
	AutomationID string `json:"automation_id,omitempty"`
	Name         string `json:"name,omitempty"`
	Enabled      bool   `json:"enabled"`
	Focused      bool   `json:"focused"`
	Bounds       Bounds `json:"bounds"`
}

// Observe is the closed openadapt.authoring.observe/v1 projection.
type Observe struct {
	SchemaVersion string  `json:"schema_version"`
	Backend       string  `json:"backend"`
	Provider      string  `json:"provider"`
	Mode          string  `json:"mode"`
	AgentDrive    bool    `json:"agent_drive"`
	CoachOnly     bool    `json:"coach_only"`
	Recording     bool    `json:"recording"`
	Window        *Window `json:"window,omitempty"`
	Tree          []Node  `json:"tree"`
	Truncated     bool    `json:"truncated"`
	NodeCount     int     `json:"node_count"`
	Reason        string  `json:"reason,omitempty"`
}

// ProjectObserve builds the observe projection from what the session
// returned. It never fails: whatever does not validate is dropped (a node
// with a bad id or bounds, a label that fails the PHI filter, an unknown
// role becomes "unknown", an unknown backend becomes a coach-only "windows"
// with an empty tree, as the Python wire does). At most [MaxObserveNodes]
// nodes are kept and the compact JSON stays within [MaxObserveBytes]: tail
// nodes are dropped to fit, and then Truncated is true. Duplicate node ids
// keep their first node only: a click must name one node.
func ProjectObserve(raw map[string]any) Observe {
	backend, _ := raw["backend"].(string)
	tree, _ := raw["tree"].([]any)
	coach := false
	if !backends[backend] {
		backend, coach, tree = "windows", true, nil
	}
	coach = coach || coachBackends[backend] || raw["coach_only"] == true
	provider, _ := raw["provider"].(string)
	if !providers[provider] {
		provider = "none"
	}
	o := Observe{
		SchemaVersion: ObserveSchema,
		Backend:       backend,
		Provider:      provider,
		Mode:          "authoring",
		CoachOnly:     coach,
		Recording:     raw["recording"] == true,
		Window:        projectWindow(raw["window"]),
		Tree:          []Node{},
		Truncated:     raw["truncated"] == true,
	}
	o.AgentDrive = !coach && driveBackends[backend] && raw["agent_drive"] != false && o.Window != nil
	if !coach {
		seen := map[string]bool{}
		for _, item := range tree {
			if len(o.Tree) == MaxObserveNodes {
				o.Truncated = true // raw nodes remain beyond the cap
				break
			}
			n, ok := projectNode(item)
			if !ok || seen[n.NodeID] {
				continue
			}
			seen[n.NodeID] = true
			o.Tree = append(o.Tree, n)
		}
	}
	o.fit()
	return o
}

// fit drops tail nodes until the compact JSON is within MaxObserveBytes.
func (o *Observe) fit() {
	for {
		o.NodeCount = len(o.Tree)
		o.Reason = ""
		if len(o.Tree) == 0 {
			o.Reason = emptyReasonStr
		}
		b, err := json.Marshal(o)
		if err != nil {
			// Every field is a validated string, bool or finite number.
			panic("authoring: observe projection does not marshal: " + err.Error())
		}
		if len(b) <= MaxObserveBytes || len(o.Tree) == 0 {
			return
		}
		// Drop about as many nodes as the excess needs, at least one.
		per := len(b) / len(o.Tree)
		drop := (len(b)-MaxObserveBytes)/max(per, 1) + 1
		o.Tree = o.Tree[:max(len(o.Tree)-drop, 0)]
		o.Truncated = true
	}
}

func projectWindow(v any) *Window {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	name := safeProcessName(m["process_name"])
	b, ok := projectBounds(m["bounds"])
	if name == "" || !ok {
		return nil
	}
	return &Window{ProcessName: name, Role: "window", Bounds: b}
}

func projectNode(v any) (Node, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return Node{}, false
	}
	id, _ := m["node_id"].(string)
	enabled, eok := m["enabled"].(bool)
	focused, fok := m["focused"].(bool)
	b, bok := projectBounds(m["bounds"])
	if !NodeIDRE().MatchString(id) || !eok || !fok || !bok {
		return Node{}, false
	}
	role, _ := m["role"].(string)
	if !elementRoles[role] {
		role = "unknown"
	}
	n := Node{
		NodeID: id, Role: role, Enabled: enabled, Focused: focused, Bounds: b,
		ControlType:  SafeLabel(m["control_type"]),
		ClassName:    SafeLabel(m["class_name"]),
		AutomationID: SafeLabel(m["automation_id"]),
		Name:         SafeLabel(m["name"]),
	}
	if len(n.ClassName) > 64 {
		n.ClassName = n.ClassName[:64]
	}
	return n, true
}

func projectBounds(v any) (Bounds, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return Bounds{}, false
	}
	var f [4]float64
	for i, k := range [4]string{"x", "y", "w", "h"} {
		x, ok := number(m[k])
		if !ok || x < 0 || x > 1 {
			return Bounds{}, false
		}
		f[i] = x
	}
	const eps = 1e-9
	if f[0]+f[2] > 1+eps || f[1]+f[3] > 1+eps {
		return Bounds{}, false
	}
	return Bounds{X: f[0], Y: f[1], W: f[2], H: f[3]}, true
}

// number accepts a finite JSON number (float64 or json.Number), never a bool
// or a string.
func number(v any) (float64, bool) {
	var x float64
	switch n := v.(type) {
	case float64:
		x = n
	case json.Number:
		f, err := n.Float64()
		if err != nil {
			return 0, false
		}
		x = f
	case int:
		x = float64(n)
	default:
		return 0, false
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, false
	}
	return x, true
}
