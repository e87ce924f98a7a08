package media

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
)

// wavInfo is what parseWAV reads back from a file.
type wavInfo struct {
	format, channels, bits uint16
	rate                   uint32
	samples                []int16
}

// parseWAV checks the RIFF structure independently of the writer and returns the format and
// samples.
func parseWAV(t *testing.T, b []byte) wavInfo {
	t.Helper()
	le := binary.LittleEndian
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		t.Fatalf("not a RIFF/WAVE file")
	}
	if got := le.Uint32(b[4:]); int(got) != len(b)-8 {
		t.Fatalf("RIFF size %d, want %d", got, len(b)-8)
	}
	var info wavInfo
	sawFmt := false
	for p := 12; p+8 <= len(b); {
		id, size := string(b[p:p+4]), int(le.Uint32(b[p+4:]))
		body := b[p+8:]
		if size > len(body) {
			t.Fatalf("chunk %q size %d overruns the file", id, size)
		}
		body = body[:size]
		switch id {
		case "fmt ":
			info.format, info.channels = le.Uint16(body), le.Uint16(body[2:])
			info.rate, info.bits = le.Uint32(body[4:]), le.Uint16(body[14:])
			if byteRate := le.Uint32(body[8:]); byteRate != info.rate*uint32(info.channels)*uint32(info.bits)/8 {
				t.Errorf("byte rate %d does not match the format", byteRate)
			}
			sawFmt = true
		case "data":
			if !sawFmt {
				t.Fatal("data chunk before fmt chunk")
			}
			info.samples = make([]int16, size/2)
			for i := range info.samples {
				info.samples[i] = int16(le.Uint16(body[2*i:]))
			}
			return info
		}
		p += 8 + size + size%2
	}
	t.Fatal("no data chunk")
	return info
}

func TestRenderWAV(t *testing.T) {
	t.Parallel()
	tests := []struct {
		duration  time.Duration
		rate      int
		wantRate  uint32
		wantCount int
	}{
		{time.Second, 0, 24000, 24000},
		{10 * time.Second, 0, 24000, 240000},
		{2500 * time.Millisecond, 44100, 44100, 110250},
		{1234567 * time.Microsecond, 48000, 48000, 59259}, // 59259.2 rounds down
		{1234577 * time.Microsecond, 48000, 48000, 59260}, // 59259.7 rounds up
		{300 * time.Millisecond, 8000, 8000, 2400},
		{time.Millisecond, 0, 24000, 24},
		{time.Second / 24000, 0, 24000, 1},
		{3 * time.Second / 24000, 0, 24000, 3},
		{MaxAudioDuration, 0, 24000, 14400000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s@%d", tt.duration, tt.rate), func(t *testing.T) {
			t.Parallel()
			if tt.duration > time.Minute && testing.Short() {
				t.Skip("long audio in -short mode")
			}
			b, err := RenderWAV(AudioSpec{Duration: tt.duration, SampleRate: tt.rate, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			info := parseWAV(t, b)
			if info.format != 1 || info.channels != 1 || info.bits != 16 || info.rate != tt.wantRate {
				t.Errorf("format %d, %d channels, %d bits, %d Hz; want PCM (1), 1 channel, 16 bits, %d Hz",
					info.format, info.channels, info.bits, info.rate, tt.wantRate)
			}
			if len(info.samples) != tt.wantCount {
				t.Errorf("%d samples, want %d", len(info.samples), tt.wantCount)
			}
			got := time.Duration(len(info.samples)) * time.Second / time.Duration(info.rate)
			if diff := (got - tt.duration).Abs(); diff > time.Second/time.Duration(info.rate) {
				t.Errorf("duration %s, want %s", got, tt.duration)
			}
			checkAudible(t, info)
		})
	}
}

// checkAudible checks that the signal is loud enough to hear, starts and ends at silence, and
// has no clicks: no step between samples larger than the smooth tones can make.
func checkAudible(t *testing.T, info wavInfo) {
	t.Helper()
	s := info.samples
	if len(s) < int(info.rate)/10 {
		return // too short for a meaningful level
	}
	var sum float64
	for _, v := range s {
		sum += float64(v) * float64(v)
	}
	if rms := math.Sqrt(sum / float64(len(s))); rms < 1000 {
		t.Errorf("RMS level %.0f is too quiet to hear", rms)
	}
	if first, last := s[0], s[len(s)-1]; first != 0 || abs64(int64(last)) > 50 {
		t.Errorf("first sample %d and last %d: want silence at both ends", first, last)
	}
	// The sum of the tones' largest slopes at 8 kHz is about 12000 per sample; scale to rate.
	limit := int64(13000 * 8000 / int(info.rate))
	for i := 1; i < len(s); i++ {
		if step := abs64(int64(s[i]) - int64(s[i-1])); step > limit {
			t.Errorf("step of %d at sample %d (limit %d): a click", step, i, limit)
			break
		}
	}
}

func TestRenderWAVIsDeterministicAndSeeded(t *testing.T) {
	t.Parallel()
	spec := AudioSpec{Duration: 3 * time.Second, Seed: 11}
	a, err := RenderWAV(spec)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := RenderWAV(spec)
	if !bytes.Equal(a, b) {
		t.Error("the same spec gave different bytes")
	}
	// Default and explicit 24 kHz are the same file.
	spec.SampleRate = DefaultSampleRate
	if c, _ := RenderWAV(spec); !bytes.Equal(a, c) {
		t.Error("SampleRate 0 and DefaultSampleRate gave different bytes")
	}
	for _, seed := range []uint64{0, 12, 1 << 40} {
		spec.Seed = seed
		if d, _ := RenderWAV(spec); bytes.Equal(a, d) {
			t.Errorf("seed %d gave the same bytes as seed 11", seed)
		}
	}
}

func TestRenderWAVRejectsBadSpecs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec AudioSpec
	}{
		{"zero duration", AudioSpec{}},
		{"negative duration", AudioSpec{Duration: -time.Second}},
		{"too long", AudioSpec{Duration: MaxAudioDuration + time.Millisecond}},
		{"shorter than a sample", AudioSpec{Duration: time.Microsecond, SampleRate: 8000}},
		{"rate too low", AudioSpec{Duration: time.Second, SampleRate: 4000}},
		{"rate too high", AudioSpec{Duration: time.Second, SampleRate: 192000}},
		{"negative rate", AudioSpec{Duration: time.Second, SampleRate: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := RenderWAV(tt.spec); !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("RenderWAV(%+v) error = %v, want ErrInvalidSpec", tt.spec, err)
			}
		})
	}
}

func TestIsinMatchesSine(t *testing.T) {
	t.Parallel()
	for i := range 4096 {
		phase := uint32(i) << 20
		want := 32767 * math.Sin(2*math.Pi*float64(phase)/(1<<32))
		if got := float64(isin(phase)); math.Abs(got-want) > 40 {
			t.Fatalf("isin(%#x) = %.0f, want %.0f ± 40", phase, got, want)
		}
	}
}

func TestPhaseStep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		note, rate int
		wantHz     float64
	}{
		{69, 24000, 440},
		{57, 24000, 220},
		{81, 48000, 880},
		{60, 8000, 261.626},
		{45, 44100, 110},
	}
	for _, tt := range tests {
		got := float64(phaseStep(tt.note, tt.rate)) * float64(tt.rate) / (1 << 32)
		if math.Abs(got-tt.wantHz) > 0.01 {
			t.Errorf("phaseStep(%d, %d) is %.3f Hz, want %.3f", tt.note, tt.rate, got, tt.wantHz)
		}
	}
}

func BenchmarkRenderWAV(b *testing.B) {
	spec := AudioSpec{Duration: 10 * time.Second, Seed: 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RenderWAV(spec); err != nil {
			b.Fatal(err)
		}
	}
}

// abs64 returns |v|.
func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
