package inputs

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/png"
	"net/url"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	t.Parallel()
	allow, err := ParseAllow([]string{"127.0.0.1:8000", "files.test"})
	if err != nil {
		t.Fatal(err)
	}
	r := Default()
	for _, tc := range []struct {
		url  string
		way  Way
		rule string
	}{
		{"https://example.com/cat.png", StandInput, ""},
		{"HTTPS://Example.COM./cat.png", StandInput, ""},
		{"http://127.0.0.1:8000/cat.png", Allowed, ""},
		{"http://127.0.0.1:8001/cat.png", 0, RuleLoopback},
		{"https://files.test/a.png", Allowed, ""},
		{"http://example.com/cat.png", 0, RuleHTTPSOnly},
		{"https://10.1.2.3/x", 0, RulePrivate},
		{"https://172.16.0.1/x", 0, RulePrivate},
		{"https://100.64.1.1/x", 0, RulePrivate},
		{"https://[fe80::1]/x", 0, RulePrivate},
		{"https://[::ffff:127.0.0.1]/x", 0, RuleLoopback},
		{"https://169.254.169.254/x", 0, RuleMetadata},
		{"https://8.8.8.8/x", 0, RuleBareIP},
		{"https://intranet/x", 0, RuleLocalName},
		{"https://db.internal/x", 0, RuleLocalName},
		{"file:///etc/passwd", 0, RuleScheme},
		{"gopher://example.com/", 0, RuleScheme},
		{"data:image/png;base64,!!!", 0, RuleInlineInvalid},
		{"data:text/plain,hello", 0, RuleContentType},
		{"data:image/png", 0, RuleInlineInvalid},
		{"data:image/png;base64," + strings.Repeat("A", 1<<20), 0, RuleInlineTooBig},
	} {
		v, ref := r.Judge(tc.url, Image, allow)
		switch {
		case tc.rule == "" && ref != nil:
			t.Errorf("%.60s: refused %s (%s)", tc.url, ref.Rule, ref.Message)
		case tc.rule != "" && (ref == nil || ref.Rule != tc.rule):
			t.Errorf("%.60s: %+v, want rule %s", tc.url, ref, tc.rule)
		case tc.rule == "" && v.Way != tc.way:
			t.Errorf("%.60s: way %d, want %d", tc.url, v.Way, tc.way)
		}
	}
	// The rules a scenario turns off let plain http: and bare addresses by.
	loose := Default()
	loose.HTTPSOnly, loose.HostNames = false, false
	if _, ref := loose.Judge("http://8.8.8.8/x", Image, nil); ref != nil {
		t.Errorf("loose rules refused %v", ref)
	}
	if _, ref := loose.Judge("http://10.0.0.1/x", Image, nil); ref == nil || ref.Rule != RulePrivate {
		t.Errorf("a private address is refused whatever the rules: %v", ref)
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, 33, 17)))
	if in, f := Decode(b.Bytes(), "", Image); f != nil || in.Width != 33 || in.Height != 17 || in.ContentType != "image/png" {
		t.Errorf("png: %+v %v", in, f)
	}
	if _, f := Decode(b.Bytes(), "audio/wav", Image); f == nil || f.Code != FailType {
		t.Errorf("a png declared audio: %v", f)
	}
	if _, f := Decode([]byte("\x89PNG\r\n\x1a\nbroken"), "image/png", Image); f == nil || f.Code != FailUndecodable {
		t.Errorf("broken png: %v", f)
	}
	// A WAV of 2 s at 8000 bytes a second.
	wav := []byte("RIFF\x00\x00\x00\x00WAVEfmt ")
	wav = binary.LittleEndian.AppendUint32(wav, 16)
	wav = append(wav, 1, 0, 1, 0)
	wav = binary.LittleEndian.AppendUint32(wav, 8000)
	wav = binary.LittleEndian.AppendUint32(wav, 8000)
	wav = append(wav, 1, 0, 8, 0)
	wav = append(wav, "data"...)
	wav = binary.LittleEndian.AppendUint32(wav, 16000)
	wav = append(wav, make([]byte, 16000)...)
	if in, f := Decode(wav, "", Audio); f != nil || in.Duration != 2 {
		t.Errorf("wav: %+v %v", in, f)
	}
	// A data URI decodes to its bytes.
	v, ref := Default().Judge("data:image/png;base64,"+base64.StdEncoding.EncodeToString(b.Bytes()), Image, nil)
	if ref != nil || !bytes.Equal(v.Data, b.Bytes()) {
		t.Errorf("data URI: %v", ref)
	}
}

func TestMembers(t *testing.T) {
	t.Parallel()
	schema := `{"properties":{"image_url":{"type":"string","format":"uri"},"mask_url":{"type":"string","format":"uri"},
		"image_urls":{"type":"array","items":{"type":"string","format":"uri"}},"loras":{"type":"array","items":{"type":"object"}},
		"webhook_url":{"type":"string","format":"uri"},"input_audio":{"type":"string","format":"uri"},"prompt":{"type":"string"}}}`
	got := Members([]byte(schema), nil)
	var names []string
	for _, m := range got {
		names = append(names, m.Name+":"+string(m.Kind))
	}
	if strings.Join(names, " ") != "image_url:image image_urls:image input_audio:audio mask_url:image" || !got[0].Image || !got[3].Mask || !got[1].List {
		t.Errorf("members = %v", got)
	}
}

func TestAllow(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"host:0", "host:99999", "a/b", "[::1]:x"} {
		if _, err := ParseAllow([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	a, _ := ParseAllow([]string{"[::1]:9000", "example.org"})
	for raw, want := range map[string]bool{"http://[::1]:9000/x": true, "http://[::1]:9001/x": false, "https://EXAMPLE.org/x": true, "http://example.org:81/": true, "https://other.org/": false} {
		u, _ := url.Parse(raw)
		if got := a.Matches(u); got != want {
			t.Errorf("%s: %v, want %v", raw, got, want)
		}
	}
}

func FuzzJudge(f *testing.F) {
	f.Add("https://example.com/x.png")
	f.Add("data:image/png;base64,iVBORw0KGgo=")
	f.Add("http://[::1]:80/")
	f.Fuzz(func(t *testing.T, raw string) {
		v, ref := Default().Judge(raw, Image, nil)
		if ref == nil && v.Way == Inline {
			_, _ = Decode(v.Data, v.ContentType, Image)
		}
	})
}
