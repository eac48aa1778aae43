package cards

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const canary = "CANARY-7f3a"

var params = []Param{
	{Name: "patient_mrn", Type: "string"}, {Name: "referral_date", Type: "date"}, {Name: "dose", Type: "number"},
	{Name: "priority", Type: "enum"}, {Name: "Größe", Type: "entity_ref"},
}

func opts() Options {
	return Options{Params: params, Choices: func(name string) ([]string, error) {
		if name == "priority" {
			return []string{"routine", "urgent", "stat"}, nil
		}
		return nil, nil
	}}
}

// TestParseAnchorCard: the card format of OpenAdapt's later agent, as its
// documentation shows it, parses here unchanged.
func TestParseAnchorCard(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`{
  "name": "enter_referral",
  "purpose": "Create an outgoing referral for an existing patient in the clinic EMR.",
  "done_means": "The referral appears on the patient's chart in the EMR's referral report.",
  "inputs": {
    "patient_mrn": {"description": "Clinic MRN of the patient.", "pattern": "^[0-9]{6,10}$"},
    "referral_date": {"description": "Date of the referral.", "format": "date"}
  }
}`), opts())
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "enter_referral" || !strings.HasPrefix(c.Purpose, "Create") || !strings.HasPrefix(c.DoneMeans, "The referral") {
		t.Fatalf("%+v", c)
	}
	mrn := c.Inputs["patient_mrn"]
	if mrn.Description != "Clinic MRN of the patient." || mrn.Pattern != "^[0-9]{6,10}$" || mrn.CheckString("1234567") != "" || mrn.CheckString("12-34") != ProblemPattern {
		t.Fatalf("patient_mrn %+v", mrn)
	}
	if d := c.Inputs["referral_date"]; d.Format != "date" || d.CheckString("2026-02-30") != ProblemNotADate {
		t.Fatalf("referral_date %+v", d)
	}
	if c, err := Parse([]byte(`{}`), opts()); err != nil || c.Name != "" || len(c.Inputs) != 0 {
		t.Fatalf("empty card: %+v %v", c, err)
	}
}

// TestParseRefuses: every rule, and no error repeats the card's text.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 281)
	for name, c := range map[string]struct{ card, field string }{
		"not json":             {`{"name":`, ""},
		"duplicate key":        {`{"purpose":"a` + canary + `","purpose":"b"}`, ""},
		"bom":                  {"\ufeff{}", ""},
		"not an object":        {`["` + canary + `"]`, ""},
		"unknown key":          {`{"` + canary + `":1}`, ""},
		"name syntax":          {`{"name":"Enter-` + canary + `"}`, "name"},
		"name too short":       {`{"name":"ab"}`, "name"},
		"name like an id":      {`{"name":"workflow_0123456789abcdef01234567"}`, "name"},
		"name prefix":          {`{"name":"workflow_x"}`, "name"},
		"name digits":          {`{"name":"form_12345"}`, "name"},
		"purpose not string":   {`{"purpose":1}`, "purpose"},
		"purpose empty":        {`{"purpose":"  "}`, "purpose"},
		"purpose too long":     {`{"purpose":"` + long + `"}`, "purpose"},
		"purpose control":      {`{"purpose":"a\n` + canary + `"}`, "purpose"},
		"purpose bidi":         {`{"purpose":"a\u202e` + canary + `"}`, "purpose"},
		"purpose zwsp":         {`{"purpose":"a\u200b` + canary + `"}`, "purpose"},
		"digits":               {`{"done_means":"MRN 0012345 ` + canary + `"}`, "done_means"},
		"wide digits":          {`{"done_means":"MRN ٠١٢٣٤ ` + canary + `"}`, "done_means"},
		"email":                {`{"purpose":"mail jane.doe@example.org ` + canary + `"}`, "purpose"},
		"phone":                {`{"purpose":"call 555-123-4567 ` + canary + `"}`, "purpose"},
		"phone parens":         {`{"purpose":"call (555) 123-4567 ` + canary + `"}`, "purpose"},
		"inputs not object":    {`{"inputs":[]}`, "inputs"},
		"unknown input":        {`{"inputs":{"` + canary + `":{}}}`, "inputs"},
		"secret input":         {`{"inputs":{"portal_password":{}}}`, "inputs"},
		"input not object":     {`{"inputs":{"dose":"` + canary + `"}}`, "inputs.*"},
		"input unknown key":    {`{"inputs":{"dose":{"` + canary + `":1}}}`, "inputs.*"},
		"description long":     {`{"inputs":{"dose":{"description":"` + strings.Repeat("d", 201) + `"}}}`, "inputs.*.description"},
		"format unknown":       {`{"inputs":{"patient_mrn":{"format":"email"}}}`, "inputs.*.format"},
		"format on number":     {`{"inputs":{"dose":{"format":"date"}}}`, "inputs.*.format"},
		"date-time on date":    {`{"inputs":{"referral_date":{"format":"date-time"}}}`, "inputs.*.format"},
		"pattern on number":    {`{"inputs":{"dose":{"pattern":"^1$"}}}`, "inputs.*.pattern"},
		"pattern empty":        {`{"inputs":{"patient_mrn":{"pattern":""}}}`, "inputs.*.pattern"},
		"pattern too long":     {`{"inputs":{"patient_mrn":{"pattern":"` + strings.Repeat("a", 201) + `"}}}`, "inputs.*.pattern"},
		"pattern bad":          {`{"inputs":{"patient_mrn":{"pattern":"(` + canary + `"}}}`, "inputs.*.pattern"},
		"pattern es":           {`{"inputs":{"patient_mrn":{"pattern":"\\s` + canary + `"}}}`, "inputs.*.pattern"},
		"pattern identifier":   {`{"inputs":{"patient_mrn":{"pattern":"^123456$"}}}`, "inputs.*.pattern"},
		"enum on number":       {`{"inputs":{"dose":{"enum":["1"]}}}`, "inputs.*.enum"},
		"enum empty":           {`{"inputs":{"patient_mrn":{"enum":[]}}}`, "inputs.*.enum"},
		"enum not strings":     {`{"inputs":{"patient_mrn":{"enum":[1]}}}`, "inputs.*.enum"},
		"enum twice":           {`{"inputs":{"patient_mrn":{"enum":["a` + canary + `","a` + canary + `"]}}}`, "inputs.*.enum"},
		"enum widens":          {`{"inputs":{"priority":{"enum":["routine","` + canary + `"]}}}`, "inputs.*.enum"},
		"enum not dates":       {`{"inputs":{"referral_date":{"enum":["2026-01-01","` + canary + `"]}}}`, "inputs.*.enum"},
		"enum vs pattern":      {`{"inputs":{"patient_mrn":{"enum":["ab` + canary + `"],"pattern":"^[0-9]+$"}}}`, "inputs.*.enum"},
		"enum identifier":      {`{"inputs":{"patient_mrn":{"enum":["x@example.org"]}}}`, "inputs.*.enum"},
		"minLength on number":  {`{"inputs":{"dose":{"minLength":1}}}`, "inputs.*.minLength"},
		"minLength negative":   {`{"inputs":{"patient_mrn":{"minLength":-1}}}`, "inputs.*.minLength"},
		"maxLength float":      {`{"inputs":{"patient_mrn":{"maxLength":1.5}}}`, "inputs.*.maxLength"},
		"min above max length": {`{"inputs":{"patient_mrn":{"minLength":3,"maxLength":2}}}`, "inputs.*"},
		"minimum on string":    {`{"inputs":{"patient_mrn":{"minimum":1}}}`, "inputs.*.minimum"},
		"maximum not number":   {`{"inputs":{"dose":{"maximum":"5"}}}`, "inputs.*.maximum"},
		"maximum infinite":     {`{"inputs":{"dose":{"maximum":1e999}}}`, ""},
		"min above max":        {`{"inputs":{"dose":{"minimum":3,"maximum":2.5}}}`, "inputs.*"},
	} {
		_, err := Parse([]byte(c.card), opts())
		var ce *Error
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) || ce.Field != c.field {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if strings.Contains(err.Error(), canary) || strings.Contains(err.Error(), "Größe") {
			t.Errorf("%s: the error repeats card text: %v", name, err)
		}
	}
}

// TestConstraints: each constraint's problem code, in the documented
// order.
func TestConstraints(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`{"inputs":{
  "patient_mrn":{"minLength":2,"maxLength":4,"pattern":"^[a-z]+$","enum":["ab","abc","abcd"]},
  "Größe":{"format":"date-time"},
  "dose":{"minimum":-1.5,"maximum":1e2},
  "priority":{"enum":["stat","urgent"]}}}`), opts())
	if err != nil {
		t.Fatal(err)
	}
	mrn := c.Inputs["patient_mrn"]
	for v, want := range map[string]string{"ab": "", "abcd": "", "a": ProblemNotAllowed, "x": ProblemNotAllowed, "abcde": ProblemNotAllowed} {
		if got := mrn.CheckString(v); got != want {
			t.Errorf("mrn %q: %q, want %q", v, got, want)
		}
	}
	mrn.Enum = nil
	for v, want := range map[string]string{"a": ProblemTooShort, "abcde": ProblemTooLong, "AB": ProblemPattern, "äb": ProblemPattern, "ab": ""} {
		if got := mrn.CheckString(v); got != want {
			t.Errorf("mrn without enum %q: %q, want %q", v, got, want)
		}
	}
	dt := c.Inputs["Größe"]
	for v, want := range map[string]string{"2026-10-08T09:30:00Z": "", "2026-10-08t09:30:00.5+02:00": "", "2026-10-08T09:30:00": ProblemNotADate,
		"2026-02-30T09:30:00Z": ProblemNotADate, "2026-10-08 09:30:00Z": ProblemNotADate, "2026-10-08": ProblemNotADate} {
		if got := dt.CheckString(v); got != want {
			t.Errorf("date-time %q: %q, want %q", v, got, want)
		}
	}
	dose := c.Inputs["dose"]
	for v, want := range map[string]string{"-1.5": "", "100": "", "1e2": "", "-1.50001": ProblemBelowMinimum, "100.0000001": ProblemAboveMaximum,
		"1e999": ProblemAboveMaximum, "-1e999": ProblemBelowMinimum, "1e-999": "", "0": ""} {
		if got := dose.CheckNumber(v); got != want {
			t.Errorf("dose %s: %q, want %q", v, got, want)
		}
	}
	if dose.MinimumText != "-1.5" || dose.MaximumText != "1e2" {
		t.Errorf("tokens %q %q", dose.MinimumText, dose.MaximumText)
	}
	var none *Input
	if none.CheckString("x") != "" || none.CheckNumber("1") != "" {
		t.Error("a nil Input refuses")
	}
}

// TestPatterns: the syntax shared by RE2 and ECMAScript is accepted and
// checked with ECMAScript's meaning; anything else is refused.
func TestPatterns(t *testing.T) {
	t.Parallel()
	for _, p := range []string{`^[0-9]{6,10}$`, `^[A-Z]{2}-\d{4}$`, `^(?:ab|cd)+?$`, `^(?<y>\d{4})-\d\d$`, `[^\]\[\-]`, `\bword\b`,
		`^\x41\.\*\/$`, `a{2,}`, `[.{}()]`, `^[À-ÿ ]+$`, `\t\n\r\f\v\D\W\B`, `^$`} {
		if re, rule := compilePattern(p); re == nil {
			t.Errorf("%q refused: %s", p, rule)
		}
	}
	for _, p := range []string{`\s`, `\S`, `\p{L}`, `\PL`, `\Aa`, `a\z`, `\Qa\E`, `\C`, `\1`, `\0`, `\x{41}`, `\x4`, `(?i)a`, `(?P<n>a)`,
		`(?=a)`, `(?<=a)`, `a{`, `a}`, `a{,3}`, `]`, `[]a]`, `[^]`, `[[:alpha:]]`, `[a`, `\`, `🩺`, `[\b]`, `\a`, `\-`, `(a`, `a**`} {
		if re, _ := compilePattern(p); re != nil {
			t.Errorf("%q accepted as %s", p, re)
		}
	}
	re, _ := compilePattern(`^a.b$`)
	for s, want := range map[string]bool{"a-b": true, "aéb": true, "a\nb": false, "a\rb": false, "a\u2028b": false, "a\u2029b": false} {
		if re.MatchString(s) != want {
			t.Errorf("^a.b$ on %q: %v", s, !want)
		}
	}
	// A pattern is a search, as in JSON Schema.
	if re, _ := compilePattern(`\d`); !re.MatchString("x1y") {
		t.Error("pattern is anchored")
	}
}

func TestIdentifierShape(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"1234": false, "12345": true, "a 2026-07-18 b": false, "x@y": false, "jane@example.org": true,
		"555-123-4567": true, "555.123.4567": true, "(555) 123-4567": true, "5555-123-45678": true,
		"call 12-34-56": false, "Step 3 of 4, 10 min": false, "١٢٣٤٥": true,
	} {
		if got := IdentifierShape(s) != ""; got != want {
			t.Errorf("IdentifierShape(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestRead: a missing card is none; a link, a FIFO, a folder or an
// oversize file is refused before it is read.
func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if c, err := Read(context.Background(), dir, opts()); c != nil || err != nil {
		t.Fatalf("no card: %v %v", c, err)
	}
	write := func(data string) {
		os.Remove(filepath.Join(dir, FileName))
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"name":"abc"}`)
	if c, err := Read(context.Background(), dir, opts()); err != nil || c.Name != "abc" {
		t.Fatalf("card: %v %v", c, err)
	}
	write(`{"purpose":"` + strings.Repeat("a", int(Limit.Max)) + `"}`)
	if _, err := Read(context.Background(), dir, opts()); err == nil || !strings.Contains(err.Error(), "16 KiB") {
		t.Fatalf("oversize: %v", err)
	}
	os.Remove(filepath.Join(dir, FileName))
	other := filepath.Join(t.TempDir(), "card.json")
	os.WriteFile(other, []byte(`{"name":"abc"}`), 0o644)
	if err := os.Symlink(other, filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(context.Background(), dir, opts()); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("link: %v", err)
	}
	os.Remove(filepath.Join(dir, FileName))
	if err := os.Mkdir(filepath.Join(dir, FileName), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(context.Background(), dir, opts()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("folder: %v", err)
	}
	os.Remove(filepath.Join(dir, FileName))
	if err := mkfifo(filepath.Join(dir, FileName)); err != nil {
		t.Skip("no FIFOs here")
	}
	if _, err := Read(context.Background(), dir, opts()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("fifo: %v", err)
	}
}

func TestCalendarDate(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"2026-07-18": true, "2024-02-29": true, "0001-01-01": true, "9999-12-31": true,
		"2026-02-29": false, "2026-04-31": false, "2026-13-01": false, "2026-00-10": false, "2026-01-00": false,
		"0000-01-01": false, "2026-7-18": false, "26-07-18": false, "2026/07/18": false, "2026-07-18T00:00:00Z": false,
		" 2026-07-18": false, "2026-07-18 ": false, "+2026-07-18": false, "２０２６-07-18": false, "": false, "2026-07-1a": false,
	} {
		if got := CalendarDate(s); got != want {
			t.Errorf("CalendarDate(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestStarter: the starter is the card format with every text empty, so
// serve ignores it (naming the empty field) until the operator fills it in;
// filled in, it is a valid card.
func TestStarter(t *testing.T) {
	t.Parallel()
	got := string(Starter([]string{"referral_date", "patient_mrn", "referral_date"}))
	want := `{
  "name": "",
  "purpose": "",
  "done_means": "",
  "inputs": {
    "patient_mrn": {"description": ""},
    "referral_date": {"description": ""}
  }
}
`
	if got != want {
		t.Fatalf("starter:\n%s", got)
	}
	_, err := Parse([]byte(got), opts())
	var ce *Error
	if !errors.As(err, &ce) || ce.Field != "name" || ce.Rule != "empty" {
		t.Fatalf("the starter parses: %v", err)
	}
	filled := strings.NewReplacer(`"name": ""`, `"name": "enter_referral"`, `"purpose": ""`, `"purpose": "P."`, `"done_means": ""`, `"done_means": "D."`,
		`"description": ""`, `"description": "X."`).Replace(got)
	if c, err := Parse([]byte(filled), opts()); err != nil || c.Name != "enter_referral" || c.Inputs["patient_mrn"].Description != "X." {
		t.Fatalf("filled starter: %v %v", c, err)
	}
	if s := string(Starter(nil)); !strings.Contains(s, `"inputs": {}`) {
		t.Errorf("no inputs: %s", s)
	}
	// Flow's names that are not plain ASCII stay as they are (card inputs
	// are keyed by Flow's own names), escaped as JSON needs.
	if s := string(Starter([]string{"Größe", "line\u2028sep", `q"uote`})); !strings.Contains(s, `"Größe": {"description": ""}`) ||
		!strings.Contains(s, `"line\u2028sep"`) || !strings.Contains(s, `"q\"uote"`) {
		t.Errorf("names: %s", s)
	}
}
