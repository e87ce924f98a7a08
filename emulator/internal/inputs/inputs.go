// Package inputs judges the media a generation names by URL as a hosted service would: which
// members of a model's input are media, which URLs such a service could reach at all, how large
// an inline (data:) input may be, and what a fetched file is once decoded. It knows nothing of
// HTTP routes or worlds: the core asks it about one URL at a time.
//
// Only three kinds of URL are ever read: data: URIs (decoded here), the emulator's own upload
// and file URLs (which the core resolves from its own stores), and hosts on an explicit allow
// list (Fetcher). Every other URL that passes the rules stands in as a seeded input of a
// documented size (StandIn); nothing is ever sent to it.
package inputs

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif" // decoded as a service decodes them
	_ "image/jpeg"
	_ "image/png"
	"maps"
	"mime"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
)

// Kind is the media kind of an input member.
type Kind string

// The media kinds a member may take.
const (
	Image Kind = "image"
	Audio Kind = "audio"
	Video Kind = "video"
)

// Member is one media input of a model: a top-level member whose value is a URL (or a list of
// them) of a kind its name says.
type Member struct {
	Name  string
	Kind  Kind
	List  bool // an array of URLs
	Mask  bool // a mask, which must have the image's size
	Image bool // the model's primary image (image_url, or prompt_image), whose size outputs follow
}

// KindOf is the media kind a member's name says, or "" when it names none: image_url,
// mask_url, end_image_url, prompt_image and image_urls are images; audio_url, input_audio and
// voice_url audio; video_url video.
func KindOf(name string) Kind {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "mask"), strings.Contains(n, "image"):
		return Image
	case strings.Contains(n, "audio"), strings.Contains(n, "voice"):
		return Audio
	case strings.Contains(n, "video"):
		return Video
	}
	return ""
}

// MarkKinds are the kinds a catalog model's inputs.media may give a member: a mask is an image
// that must have the primary image's size.
var MarkKinds = []string{string(Image), "mask", string(Audio), string(Video)}

// Members lists the media inputs of a model's input schema (its JSON): top-level string
// members of format uri, or arrays of them, whose names say a media kind, or, when marked is
// not nil (a catalog model's inputs.media), exactly the members it marks, of the kinds it
// gives. Nested URLs (a LoRA's weights) are not media and are never judged.
func Members(schemaJSON []byte, marked map[string]string) []Member {
	var s struct {
		Properties map[string]struct {
			Type   any    `json:"type"`
			Format string `json:"format"`
			Items  *struct {
				Type   any    `json:"type"`
				Format string `json:"format"`
			} `json:"items"`
		} `json:"properties"`
	}
	if json.Unmarshal(schemaJSON, &s) != nil {
		return nil
	}
	var out []Member
	for name, p := range s.Properties {
		kind, mask := KindOf(name), strings.Contains(strings.ToLower(name), "mask")
		if marked != nil {
			mark, ok := marked[name]
			if !ok {
				continue
			}
			kind, mask = Kind(mark), mark == "mask"
			if mask {
				kind = Image
			}
		}
		if kind == "" {
			continue
		}
		m := Member{Name: name, Kind: kind, Mask: mask, Image: kind == Image && !mask && (name == "image_url" || name == "prompt_image")}
		switch {
		case p.Format == "uri":
		case p.Items != nil && p.Items.Format == "uri":
			m.List = true
		default:
			continue
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Limits bound the bytes of one input of a kind, by how it arrives.
type Limits struct {
	Inline int64 // a data: URI, decoded
	URL    int64 // a file fetched from a URL
	Upload int64 // a file sent to POST /v1/uploads
}

// Rules are a hosted service's rules for inputs named by URL, as a scenario may set them.
type Rules struct {
	// HTTPSOnly refuses http: URLs.
	HTTPSOnly bool
	// HostNames refuses a URL whose host is a bare IP address.
	HostNames bool
	// MaxRedirects is how many redirects a fetch follows.
	MaxRedirects int
	// Limits are the byte limits of each kind.
	Limits map[Kind]Limits
	// UploadTTL is how long an upload may be used.
	UploadTTL time.Duration
}

// DefaultInline is the default inline limit: under the emulator's default body limit (1 MiB,
// --max-body-bytes), so that a data: URI over it can be sent at all and answered as a service
// answers it.
const DefaultInline = 512 << 10

// Default are the rules in force unless a scenario sets others: those of the hosted services
// studied (HTTPS, host names, no redirects; 25, 50 and 100 MiB fetched or uploaded for images,
// audio and video; uploads kept an hour), with DefaultInline for a data: URI.
func Default() Rules {
	return Rules{HTTPSOnly: true, HostNames: true, MaxRedirects: 0, UploadTTL: time.Hour,
		Limits: map[Kind]Limits{
			Image: {Inline: DefaultInline, URL: 25 << 20, Upload: 25 << 20},
			Audio: {Inline: DefaultInline, URL: 50 << 20, Upload: 50 << 20},
			Video: {Inline: DefaultInline, URL: 100 << 20, Upload: 100 << 20},
		}}
}

// The rules a refusal names (Refusal.Rule), as problems and the report name them.
const (
	RuleScheme        = "scheme"           // not http:, https: or data:
	RuleHTTPSOnly     = "https_only"       // http: where the service takes https: only
	RuleLoopback      = "loopback_address" // 127.0.0.0/8, ::1
	RulePrivate       = "private_address"  // RFC 1918, fc00::/7, link-local, unspecified
	RuleMetadata      = "metadata_address" // a cloud's instance metadata address
	RuleBareIP        = "bare_ip"          // a public address where the service wants a name
	RuleLocalName     = "local_host_name"  // localhost, *.local, *.internal, a name without a dot
	RuleInlineTooBig  = "inline_too_large" // a data: URI over the inline limit
	RuleInlineInvalid = "inline_invalid"   // a data: URI that does not decode
	RuleContentType   = "content_type"     // a data: URI of another media kind
)

// Refusal is a rule an input breaks at request time: the generation is answered 422.
type Refusal struct {
	Rule    string
	Message string
}

// Unreachable reports whether a rule refuses an address or scheme the hosted service could
// not reach, as the report's unreachable-input-url rule counts them.
func Unreachable(rule string) bool {
	switch rule {
	case RuleHTTPSOnly, RuleLoopback, RulePrivate, RuleMetadata, RuleLocalName:
		return true
	}
	return false
}

// Way is how an input URL is read.
type Way int

// The ways an input is read.
const (
	StandInput Way = iota // judged by the rules and never contacted: a seeded stand-in
	Inline                // a data: URI, decoded from the URL itself
	Allowed               // a host on the allow list, fetched
)

// Verdict is what the rules make of an input URL that passes them.
type Verdict struct {
	Way         Way
	URL         *url.URL
	Data        []byte // Inline: the decoded bytes
	ContentType string // Inline: the declared media type
}

// Judge applies the rules to an input URL of a kind. The emulator's own URLs are the caller's
// to recognise first; allow says which hosts may be fetched.
func (r Rules) Judge(raw string, kind Kind, allow *Allow) (Verdict, *Refusal) {
	if rest, ok := cutPrefixFold(raw, "data:"); ok {
		return r.inline(rest, kind)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return Verdict{}, &Refusal{RuleScheme, "not an absolute http(s) URL or a data: URI"}
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return Verdict{}, &Refusal{RuleScheme, "the service fetches https: URLs (and takes data: URIs), not " + scheme + ":"}
	}
	if allow.Matches(u) {
		return Verdict{Way: Allowed, URL: u}, nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		if ref := addressRefusal(ip.Unmap()); ref != nil {
			return Verdict{}, ref
		}
		if r.HostNames {
			return Verdict{}, &Refusal{RuleBareIP, host + " is a bare IP address; the service fetches URLs by host name"}
		}
	} else if localName(host) {
		return Verdict{}, &Refusal{RuleLocalName, host + " names a machine on the client's own network, which the hosted service cannot reach"}
	}
	if r.HTTPSOnly && scheme == "http" {
		return Verdict{}, &Refusal{RuleHTTPSOnly, "the service fetches https: URLs only"}
	}
	return Verdict{Way: StandInput, URL: u}, nil
}

// addressRefusal refuses an address no hosted service fetches from: its own loopback, a
// private network's, a link-local or a metadata address.
func addressRefusal(ip netip.Addr) *Refusal {
	switch {
	case ip.IsLoopback():
		return &Refusal{RuleLoopback, ip.String() + " is a loopback address: the hosted service would fetch from itself, not from the client's machine"}
	case metadataAddress(ip):
		return &Refusal{RuleMetadata, ip.String() + " is a cloud instance metadata address, which services never fetch"}
	case ip.IsPrivate(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.IsUnspecified(), ip.IsMulticast(),
		ip.Is4() && ip.As4()[0] == 100 && ip.As4()[1]&0xc0 == 64: // 100.64.0.0/10, carrier-grade NAT
		return &Refusal{RulePrivate, ip.String() + " is a private or link-local address, which the hosted service cannot reach"}
	}
	return nil
}

// metadataAddress reports the instance metadata addresses of the big clouds.
func metadataAddress(ip netip.Addr) bool {
	return ip == netip.MustParseAddr("169.254.169.254") || ip == netip.MustParseAddr("fd00:ec2::254") || ip == netip.MustParseAddr("100.100.100.200")
}

// localName reports host names that only mean something on the client's own network.
func localName(host string) bool {
	if host == "localhost" || !strings.Contains(host, ".") {
		return true
	}
	for _, suffix := range []string{".localhost", ".local", ".internal", ".localdomain", ".lan", ".home.arpa"} {
		if strings.HasSuffix(host, suffix) {
			return true
		}
	}
	return false
}

// inline decodes a data: URI's payload (what follows "data:") under the inline limit.
func (r Rules) inline(rest string, kind Kind) (Verdict, *Refusal) {
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return Verdict{}, &Refusal{RuleInlineInvalid, "a data: URI needs a comma before its data"}
	}
	b64 := false
	// Compared in place: lowering the case of invalid UTF-8 changes its length.
	if n := len(meta) - len(";base64"); n >= 0 && strings.EqualFold(meta[n:], ";base64") {
		meta, b64 = meta[:n], true
	}
	ctype := "text/plain"
	if meta != "" {
		t, _, err := mime.ParseMediaType(meta)
		if err != nil {
			return Verdict{}, &Refusal{RuleInlineInvalid, "the data: URI's media type does not parse"}
		}
		ctype = t
	}
	limit := r.Limits[kind].Inline
	if n := int64(len(payload)); b64 && n/4*3 > limit+2 || !b64 && n > 3*limit {
		return Verdict{}, &Refusal{RuleInlineTooBig, fmt.Sprintf("the data: URI holds about %d bytes; the service takes at most %d inline: upload the file, or send its URL", n/4*3, limit)}
	}
	var data []byte
	var err error
	if b64 {
		data, err = base64.StdEncoding.DecodeString(payload)
		if err != nil {
			data, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(payload, "="))
		}
	} else {
		var s string
		s, err = url.PathUnescape(payload)
		data = []byte(s)
	}
	if err != nil {
		return Verdict{}, &Refusal{RuleInlineInvalid, "the data: URI's data does not decode"}
	}
	if int64(len(data)) > limit {
		return Verdict{}, &Refusal{RuleInlineTooBig, fmt.Sprintf("the data: URI holds %d bytes; the service takes at most %d inline: upload the file, or send its URL", len(data), limit)}
	}
	if KindOfType(ctype) != kind {
		return Verdict{}, &Refusal{RuleContentType, "the data: URI is " + ctype + ", not " + string(kind) + "/*"}
	}
	return Verdict{Way: Inline, Data: data, ContentType: ctype}, nil
}

// cutPrefixFold is strings.CutPrefix, ignoring case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// KindOfType is the media kind of a Content-Type, or "" when it is none.
func KindOfType(ctype string) Kind {
	t, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		return ""
	}
	major, _, _ := strings.Cut(t, "/")
	switch Kind(major) {
	case Image, Audio, Video:
		return Kind(major)
	}
	return ""
}

// Info is what an input is once read: its kind and, as far as it decodes, its shape.
type Info struct {
	Kind        Kind
	ContentType string
	Width       int     // images (and videos, when known)
	Height      int     // images (and videos, when known)
	Duration    float64 // seconds: audio (and video) when known
	Bytes       int64
	// StandIn says the input was never read: its shape is the documented stand-in's.
	StandIn bool
}

// The stand-in's shape: what an input the emulator does not fetch is taken to be.
const (
	StandInWidth    = 1024
	StandInHeight   = 1024
	StandInDuration = 10.0 // seconds, audio and video
	StandInBytes    = 1 << 20
)

// StandIn is the seeded input a URL that passes the rules stands for: a 1024×1024 image, or
// 10 s of audio or video (1280×720), of 1 MiB; its content type follows the URL's extension.
func StandIn(u *url.URL, kind Kind) Info {
	in := Info{Kind: kind, Bytes: StandInBytes, StandIn: true}
	ext := strings.ToLower(path.Ext(u.Path))
	switch kind {
	case Image:
		in.Width, in.Height, in.ContentType = StandInWidth, StandInHeight, "image/png"
		if ext == ".jpg" || ext == ".jpeg" {
			in.ContentType = "image/jpeg"
		} else if ext == ".webp" {
			in.ContentType = "image/webp"
		}
	case Audio:
		in.Duration, in.ContentType = StandInDuration, "audio/wav"
		if ext == ".mp3" {
			in.ContentType = "audio/mpeg"
		}
	case Video:
		in.Width, in.Height, in.Duration, in.ContentType = 1280, 720, StandInDuration, "video/mp4"
	}
	return in
}

// The reasons a job fails at its start because of an input, as its error's code says.
const (
	FailFetch       = "input_fetch_failed"     // the URL could not be fetched
	FailType        = "input_unsupported_type" // the file is not of the member's kind
	FailUndecodable = "input_undecodable"      // an image that does not decode
	FailTooLarge    = "input_too_large"        // the file is over the kind's limit
	FailExpired     = "input_expired"          // an upload or output link expired before the job started
)

// Failure is why an input fails its job when the job starts.
type Failure struct {
	Code    string
	Message string
}

// MaxImageSide bounds the decoded side of an input image, as services bound it.
const MaxImageSide = 16384

// Decode reads what a file is, as a service checks it: its declared type must be of the kind
// (sniffed when it declares none), an image must decode to a bounded size, a WAV gives its
// duration. Other audio and video are taken by their type.
func Decode(data []byte, ctype string, kind Kind) (Info, *Failure) {
	t, _, _ := mime.ParseMediaType(ctype)
	if t == "" || t == "application/octet-stream" || t == "binary/octet-stream" {
		t, _, _ = mime.ParseMediaType(sniff(data))
	}
	in := Info{Kind: kind, ContentType: t, Bytes: int64(len(data))}
	if KindOfType(t) != kind {
		return in, &Failure{FailType, fmt.Sprintf("the file is %s, not %s/*", cmp.Or(t, "of no known type"), kind)}
	}
	switch kind {
	case Image:
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return in, &Failure{FailUndecodable, "the image does not decode as PNG, JPEG or GIF"}
		}
		if cfg.Width < 1 || cfg.Height < 1 || cfg.Width > MaxImageSide || cfg.Height > MaxImageSide {
			return in, &Failure{FailUndecodable, fmt.Sprintf("the image is %d×%d; each side must be 1 to %d pixels", cfg.Width, cfg.Height, MaxImageSide)}
		}
		in.Width, in.Height = cfg.Width, cfg.Height
	case Audio:
		if d, ok := wavDuration(data); ok {
			in.Duration = d
		}
	}
	return in, nil
}

// sniff is a file's type from its first bytes.
func sniff(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(data, []byte("GIF8")):
		return "image/gif"
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WAVE":
		return "audio/wav"
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return "image/webp"
	case len(data) >= 8 && string(data[4:8]) == "ftyp":
		return "video/mp4"
	case bytes.HasPrefix(data, []byte("ID3")):
		return "audio/mpeg"
	}
	return "application/octet-stream"
}

// Sniff is a file's type from its first bytes, for an upload that declares none.
func Sniff(data []byte) string { return sniff(data) }

// wavDuration reads a canonical WAV's length from its fmt and data chunks.
func wavDuration(b []byte) (float64, bool) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return 0, false
	}
	var byteRate uint32
	for p := 12; p+8 <= len(b); {
		id, size := string(b[p:p+4]), binary.LittleEndian.Uint32(b[p+4:p+8])
		body := p + 8
		switch id {
		case "fmt ":
			if body+12 > len(b) {
				return 0, false
			}
			byteRate = binary.LittleEndian.Uint32(b[body+8 : body+12])
		case "data":
			if byteRate == 0 {
				return 0, false
			}
			n := min(int64(size), int64(len(b)-body))
			return float64(n) / float64(byteRate), true
		}
		p = body + int(size) + int(size&1)
		if p < body {
			return 0, false
		}
	}
	return 0, false
}

// Changes are the rules a catalog model or a scenario changes, each laid over the rules below
// it (the defaults, then the model's, then the scenario's); a nil member keeps the rule below.
type Changes struct {
	HTTPSOnly    *bool                   `yaml:"https_only" json:"https_only,omitempty"`
	HostNames    *bool                   `yaml:"host_names" json:"host_names,omitempty"`
	MaxRedirects *int                    `yaml:"max_redirects" json:"max_redirects,omitempty"`
	Limits       map[string]LimitChanges `yaml:"limits" json:"limits,omitempty"`
}

// LimitChanges change the byte limits of one media kind (image, audio or video).
type LimitChanges struct {
	Inline *int64 `yaml:"inline" json:"inline,omitempty"`
	URL    *int64 `yaml:"url" json:"url,omitempty"`
	Upload *int64 `yaml:"upload" json:"upload,omitempty"`
}

// MaxLimit bounds every byte limit a catalog or scenario may set.
const MaxLimit = 1 << 30

// Apply returns r with the changes c makes; r's limits are copied, not changed.
func (c *Changes) Apply(r Rules) Rules {
	if c == nil {
		return r
	}
	if c.HTTPSOnly != nil {
		r.HTTPSOnly = *c.HTTPSOnly
	}
	if c.HostNames != nil {
		r.HostNames = *c.HostNames
	}
	if c.MaxRedirects != nil {
		r.MaxRedirects = *c.MaxRedirects
	}
	limits := make(map[Kind]Limits, len(r.Limits))
	for k, l := range r.Limits {
		if o, ok := c.Limits[string(k)]; ok {
			if o.Inline != nil {
				l.Inline = *o.Inline
			}
			if o.URL != nil {
				l.URL = *o.URL
			}
			if o.Upload != nil {
				l.Upload = *o.Upload
			}
		}
		limits[k] = l
	}
	r.Limits = limits
	return r
}

// Check reports what a strict decoder cannot see in changes written under a name (inputs):
// the kinds and the bounds, each through problem; upload says whether upload limits may be
// set (a scenario's, not a model's: an upload belongs to no model).
func (c *Changes) Check(name string, upload bool, problem func(format string, args ...any)) {
	if c.MaxRedirects != nil && (*c.MaxRedirects < 0 || *c.MaxRedirects > 10) {
		problem("%s.max_redirects must be 0 to 10", name)
	}
	for _, kind := range slices.Sorted(maps.Keys(c.Limits)) {
		l := c.Limits[kind]
		if Kind(kind) != Image && Kind(kind) != Audio && Kind(kind) != Video {
			problem("%s.limits: %q must be image, audio or video", name, kind)
		}
		if l.Upload != nil && !upload {
			problem("%s.limits.%s.upload: an upload belongs to no model; a scenario's inputs.limits sets it", name, kind)
		}
		for _, v := range []struct {
			member string
			n      *int64
		}{{"inline", l.Inline}, {"url", l.URL}, {"upload", l.Upload}} {
			if v.n != nil && (*v.n < 1 || *v.n > MaxLimit) {
				problem("%s.limits.%s.%s must be 1 to %d bytes", name, kind, v.member, int64(MaxLimit))
			}
		}
	}
}
