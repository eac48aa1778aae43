package mailbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

const (
	tPack = "p.AbCdEf012345"
	tBind = "oab_Zm9vYmFyYmF6cXV4cXV1eHh5enp5MDEyMzQ1Njc4OWF"
)

func link(q string) string { return "openadapt://runner?" + q }

func TestParseLinkAccepts(t *testing.T) {
	v1 := "v1." + strings.Repeat("A", 32)
	long := "v1." + strings.Repeat("x_-9", 450) // 1800 characters
	for _, tc := range []struct {
		name, in, env, pack, origin string
	}{
		{"alias", link("pack=" + tPack + "&bind=" + tBind + "&origin=https://openadapt.ai"), "", tPack, ProductionOrigin},
		{"any order", link("origin=https://openadapt.ai&bind=" + tBind + "&pack=" + tPack), "", tPack, ProductionOrigin},
		{"v1 minimum", link("pack=" + v1 + "&bind=" + tBind + "&origin=https://openadapt.ai"), "", v1, ProductionOrigin},
		{"v1 long", link("pack=" + long + "&bind=" + tBind + "&origin=https://openadapt.ai"), "", long, ProductionOrigin},
		{"percent-encoded origin", link("pack=" + tPack + "&bind=" + tBind + "&origin=" + url.QueryEscape("https://openadapt.ai")), "", tPack, ProductionOrigin},
		{"pasted newline", " " + link("pack="+tPack+"&bind="+tBind+"&origin=https://openadapt.ai") + "\r\n", "", tPack, ProductionOrigin},
		{"test origin v4", link("pack=" + tPack + "&bind=" + tBind + "&origin=http://127.0.0.1:8080"), "http://127.0.0.1:8080", tPack, "http://127.0.0.1:8080"},
		{"test origin v6", link("pack=" + tPack + "&bind=" + tBind + "&origin=http://[::1]:65535"), "http://[::1]:65535", tPack, "http://[::1]:65535"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ParseLink(tc.in, tc.env)
			if err != nil {
				t.Fatalf("ParseLink: %v", err)
			}
			if l.Pack != tc.pack || l.Origin != tc.origin || l.Bind.reveal() != tBind {
				t.Fatalf("got pack %q origin %q", l.Pack, l.Origin)
			}
		})
	}
}

func TestParseLinkRefuses(t *testing.T) {
	good := func(pack, bind, origin string) string {
		return link("pack=" + pack + "&bind=" + bind + "&origin=" + origin)
	}
	const o = "https://openadapt.ai"
	hex64 := strings.Repeat("0a", 32)
	for _, tc := range []struct {
		name, in, env, field string
	}{
		{"empty", "", "", "link"},
		{"other scheme", "https://openadapt.ai/j/" + tPack, "", "link"},
		{"upper-case scheme", "OPENADAPT://runner?pack=" + tPack + "&bind=" + tBind + "&origin=" + o, "", "link"},
		{"other host", "openadapt://pair?pack=" + tPack + "&bind=" + tBind + "&origin=" + o, "", "link"},
		{"path", "openadapt://runner/?pack=" + tPack + "&bind=" + tBind + "&origin=" + o, "", "link"},
		{"userinfo", "openadapt://x@runner?pack=" + tPack + "&bind=" + tBind + "&origin=" + o, "", "link"},
		{"fragment", good(tPack, tBind, o) + "#x", "", "link"},
		{"semicolon", link("pack=" + tPack + ";bind=" + tBind + "&origin=" + o), "", "link"},
		{"extra field", good(tPack, tBind, o) + "&x=1", "", "link"},
		{"empty part", good(tPack, tBind, o) + "&", "", "link"},
		{"key without value", link("pack&bind=" + tBind + "&origin=" + o), "", "link"},
		{"encoded key", link("p%61ck=" + tPack + "&bind=" + tBind + "&origin=" + o), "", "link"},
		{"duplicate pack", good(tPack, tBind, o) + "&pack=" + tPack, "", "pack"},
		{"duplicate bind", good(tPack, tBind, o) + "&bind=" + tBind, "", "bind"},
		{"missing origin", link("pack=" + tPack + "&bind=" + tBind), "", "origin"},
		{"missing bind", link("pack=" + tPack + "&origin=" + o), "", "bind"},
		{"missing pack", link("bind=" + tBind + "&origin=" + o), "", "pack"},
		{"too long", good("v1."+strings.Repeat("a", 2000), tBind, o), "", "link"},
		{"pack short alias", good("p.AbCdEf01234", tBind, o), "", "pack"},
		{"pack long alias", good("p.AbCdEf0123456", tBind, o), "", "pack"},
		{"pack v1 short", good("v1."+strings.Repeat("a", 31), tBind, o), "", "pack"},
		{"pack v1 over 2000", "openadapt://runner?pack=v1." + strings.Repeat("a", 2001) + "&bind=x&origin=y", "", "pack"},
		{"pack bad alphabet", good("p.AbCdEf01234.", tBind, o), "", "pack"},
		{"pack percent", good("p.AbCdEf01234%2F", tBind, o), "", "pack"},
		{"bind oar", good(tPack, "oar_"+hex64, o), "", "bind"},
		{"bind oap", good(tPack, "oap_"+tBind[4:], o), "", "bind"},
		{"bind hex body", good(tPack, "oab_"+hex64, o), "", "bind"},
		{"bind short", good(tPack, tBind[:len(tBind)-1], o), "", "bind"},
		{"bind long", good(tPack, tBind+"A", o), "", "bind"},
		{"bind bad alphabet", good(tPack, tBind[:len(tBind)-1]+"+", o), "", "bind"},
		{"bind bad percent", good(tPack, "oab_%zz", o), "", "bind"},
		{"origin http", good(tPack, tBind, "http://openadapt.ai"), "", "origin"},
		{"origin slash", good(tPack, tBind, "https://openadapt.ai/"), "", "origin"},
		{"origin port", good(tPack, tBind, "https://openadapt.ai:443"), "", "origin"},
		{"origin other host", good(tPack, tBind, "https://openadapt.ai.evil.example"), "", "origin"},
		{"origin case", good(tPack, tBind, "https://OpenAdapt.ai"), "", "origin"},
		{"loopback without env", good(tPack, tBind, "http://127.0.0.1:8080"), "", "origin"},
		{"production with env", good(tPack, tBind, o), "http://127.0.0.1:8080", "origin"},
		{"env other port", good(tPack, tBind, "http://127.0.0.1:8081"), "http://127.0.0.1:8080", "origin"},
		{"env remote host", good(tPack, tBind, "http://10.0.0.1:80"), "http://10.0.0.1:80", OriginEnv},
		{"env https", good(tPack, tBind, o), "https://openadapt.ai", OriginEnv},
		{"env localhost name", good(tPack, tBind, o), "http://localhost:80", OriginEnv},
		{"env no port", good(tPack, tBind, o), "http://127.0.0.1:", OriginEnv},
		{"env port zero", good(tPack, tBind, o), "http://127.0.0.1:0", OriginEnv},
		{"env port leading zero", good(tPack, tBind, o), "http://127.0.0.1:080", OriginEnv},
		{"env port too big", good(tPack, tBind, o), "http://127.0.0.1:65536", OriginEnv},
		{"env path", good(tPack, tBind, o), "http://127.0.0.1:80/x", OriginEnv},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLink(tc.in, tc.env)
			var le *LinkError
			if !errors.As(err, &le) || !errors.Is(err, ErrInvalidLink) {
				t.Fatalf("ParseLink = %v, want a *LinkError", err)
			}
			if le.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", le.Field, tc.field, err)
			}
			if strings.Contains(err.Error(), tBind[4:12]) || strings.Contains(err.Error(), "0a0a") {
				t.Errorf("error %q holds the bind token", err)
			}
		})
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := Secret{tBind}
	var b strings.Builder
	logger := slog.New(slog.NewTextHandler(&b, nil))
	logger.Info("x", "bind", s)
	j, _ := json.Marshal(map[string]any{"s": s})
	for _, got := range []string{
		fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q %x", s, s, s, s, s, s),
		fmt.Sprintf("%v", Link{Bind: s}), fmt.Sprintf("%+v", &Link{Bind: s}), string(j), b.String(),
		fmt.Errorf("wrapped %v", s).Error(),
	} {
		if strings.Contains(got, "oab_") || strings.Contains(got, tBind[4:12]) {
			t.Errorf("secret printed: %q", got)
		}
	}
}

func TestValidLease(t *testing.T) {
	good := "oals_" + strings.Repeat("0f", 32)
	if !ValidLease(good) {
		t.Fatal("a 64-hex lease is refused")
	}
	for _, bad := range []string{"", "oals_", good + "0", good[:len(good)-1], "oals_" + strings.Repeat("0F", 32),
		"oals_" + tBind[4:], "oab_" + strings.Repeat("0f", 32), "oar_" + strings.Repeat("0f", 32)} {
		if ValidLease(bad) {
			t.Errorf("ValidLease(%q) = true", bad)
		}
	}
}

func FuzzParseLink(f *testing.F) {
	f.Add(link("pack="+tPack+"&bind="+tBind+"&origin=https://openadapt.ai"), "")
	f.Add(link("pack=v1."+strings.Repeat("A", 40)+"&bind="+tBind+"&origin=http://127.0.0.1:9"), "http://127.0.0.1:9")
	f.Add(link("pack="+tPack+"&bind=oab_"+strings.Repeat("0a", 32)+"&origin=https://openadapt.ai"), "")
	f.Add(link("origin=https%3A%2F%2Fopenadapt.ai&bind="+tBind+"&pack="+tPack), "")
	f.Add("openadapt://runner?pack=&bind=&origin=", "http://[::1]:1")
	f.Fuzz(func(t *testing.T, in, env string) {
		l, err := ParseLink(in, env)
		if err != nil {
			var le *LinkError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not a *LinkError", err)
			}
			switch le.Field {
			case "link", "pack", "bind", "origin", OriginEnv:
			default:
				t.Fatalf("field %q", le.Field)
			}
			// The message names the field, never a value from the input.
			for _, part := range strings.FieldsFunc(in, func(r rune) bool { return r == '&' || r == '=' || r == '?' }) {
				if len(part) >= 24 && strings.Contains(err.Error(), part) {
					t.Fatalf("error %q echoes input %q", err, part)
				}
			}
			return
		}
		if !ValidPack(l.Pack) || !ValidBind(l.Bind.reveal()) {
			t.Fatalf("accepted an invalid pack or bind")
		}
		if l.Origin != ProductionOrigin && l.Origin != env {
			t.Fatalf("accepted origin %q with env %q", l.Origin, env)
		}
		// Round trip: the canonical link of what was parsed parses the same.
		canon := link("pack=" + l.Pack + "&bind=" + l.Bind.reveal() + "&origin=" + l.Origin)
		l2, err := ParseLink(canon, env)
		if err != nil || l2.Pack != l.Pack || l2.Bind.reveal() != l.Bind.reveal() || l2.Origin != l.Origin {
			t.Fatalf("canonical link %q does not round-trip: %v", canon, err)
		}
	})
}
