package media

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Limits and defaults of RenderWAV.
const (
	// MaxAudioDuration is the longest audio RenderWAV produces (about 28 MB at 24 kHz).
	MaxAudioDuration = 10 * time.Minute
	// DefaultSampleRate is used when AudioSpec.SampleRate is zero.
	DefaultSampleRate = 24000
	// MinSampleRate and MaxSampleRate bound AudioSpec.SampleRate.
	MinSampleRate = 8000
	MaxSampleRate = 96000
)

// AudioSpec describes one audio output.
type AudioSpec struct {
	// Duration is the exact length, rounded to the nearest sample; 0 < Duration <= MaxAudioDuration.
	Duration time.Duration
	// SampleRate in Hz; 0 means DefaultSampleRate.
	SampleRate int
	// Seed chooses the key, tempo, chords and melody.
	Seed uint64
}

// wavHeaderLen is the size of a canonical RIFF/WAVE header with one fmt and one data chunk.
const wavHeaderLen = 44

// RenderWAV synthesises a short seeded piece (a soft chord pad under a pentatonic melody) as
// 16-bit PCM mono WAV with exactly round(Duration × SampleRate) samples. The result depends only
// on spec, and its length is exactly what WAVSize reports.
func RenderWAV(spec AudioSpec) ([]byte, error) {
	rate, n, err := wavSamples(spec)
	if err != nil {
		return nil, err
	}
	out := make([]byte, wavHeaderLen+2*n)
	putWAVHeader(out, rate, n)
	synthesize(out[wavHeaderLen:], n, rate, spec.Seed)
	return out, nil
}

// WAVSize returns the exact length of RenderWAV(spec): the header and two bytes a sample.
func WAVSize(spec AudioSpec) (int64, error) {
	_, n, err := wavSamples(spec)
	if err != nil {
		return 0, err
	}
	return wavHeaderLen + 2*int64(n), nil
}

// wavSamples validates spec and returns its sample rate and number of samples.
func wavSamples(spec AudioSpec) (rate, n int, err error) {
	rate = spec.SampleRate
	if rate == 0 {
		rate = DefaultSampleRate
	}
	if rate < MinSampleRate || rate > MaxSampleRate {
		return 0, 0, fmt.Errorf("%w: sample rate %d Hz is outside %d to %d",
			ErrInvalidSpec, rate, MinSampleRate, MaxSampleRate)
	}
	if spec.Duration <= 0 || spec.Duration > MaxAudioDuration {
		return 0, 0, fmt.Errorf("%w: audio duration %s is outside (0, %s]",
			ErrInvalidSpec, spec.Duration, MaxAudioDuration)
	}
	n = int((int64(spec.Duration)*int64(rate) + int64(time.Second)/2) / int64(time.Second))
	if n < 1 {
		return 0, 0, fmt.Errorf("%w: audio duration %s is shorter than one sample at %d Hz",
			ErrInvalidSpec, spec.Duration, rate)
	}
	return rate, n, nil
}

// putWAVHeader writes the 44-byte header of a mono 16-bit PCM file of n samples.
func putWAVHeader(b []byte, rate, n int) {
	le := binary.LittleEndian
	dataLen := uint32(2 * n)
	copy(b[0:], "RIFF")
	le.PutUint32(b[4:], 36+dataLen)
	copy(b[8:], "WAVEfmt ")
	le.PutUint32(b[16:], 16) // fmt chunk size
	le.PutUint16(b[20:], 1)  // PCM
	le.PutUint16(b[22:], 1)  // mono
	le.PutUint32(b[24:], uint32(rate))
	le.PutUint32(b[28:], uint32(rate)*2) // bytes per second
	le.PutUint16(b[32:], 2)              // block align
	le.PutUint16(b[34:], 16)             // bits per sample
	copy(b[36:], "data")
	le.PutUint32(b[40:], dataLen)
}

// tone is one note: a sine (plus, for the melody, a quiet octave overtone) shaped by a linear
// attack and release so that it starts and ends at zero, which is what keeps the audio free of
// clicks.
type tone struct {
	start, length    int    // in samples
	inc              uint32 // phase step per sample: frequency × 2³² / rate
	amp              int32  // Q15
	attack, release  int    // in samples
	decays, overtone bool
}

// synthesize writes n little-endian 16-bit samples into pcm.
func synthesize(pcm []byte, n, rate int, seed uint64) {
	tones := compose(n, rate, seed)
	ms := func(v int) int { return max(1, v*rate/1000) }

	// Mix in blocks so memory stays small however long the audio is; tones are sorted by start.
	const block = 4096
	var mix [block]int32
	var active []tone
	next := 0
	fadeIn, fadeOut := min(ms(5), n), min(ms(50), max(1, n/4))
	for b0 := 0; b0 < n; b0 += block {
		b1 := min(n, b0+block)
		for next < len(tones) && tones[next].start < b1 {
			active = append(active, tones[next])
			next++
		}
		clear(mix[:])
		kept := active[:0]
		for _, t := range active {
			t.render(mix[:b1-b0], b0)
			if t.start+t.length > b1 {
				kept = append(kept, t)
			}
		}
		active = kept
		for i, v := range mix[:b1-b0] {
			s := b0 + i
			// A global fade covers tones cut short by the end of the file.
			if s < fadeIn {
				v = int32(int64(v) * int64(s) / int64(fadeIn))
			}
			if r := n - 1 - s; r < fadeOut {
				v = int32(int64(v) * int64(r) / int64(fadeOut))
			}
			v = min(32767, max(-32767, v))
			binary.LittleEndian.PutUint16(pcm[2*s:], uint16(int16(v)))
		}
	}
}

// render adds the part of t that falls in mix, whose first element is sample b0.
func (t *tone) render(mix []int32, b0 int) {
	from := max(0, t.start-b0)
	to := min(len(mix), t.start+t.length-b0)
	// The envelope's ramps as Q16 slopes, so the loop multiplies instead of dividing.
	attack := (int64(32768) << 16) / int64(t.attack)
	release := (int64(32768) << 16) / int64(t.release)
	decay := int64(0)
	if t.decays {
		// Fall to half the level over the note, like a plucked string.
		decay = (int64(32768) << 16) / int64(t.length)
	}
	amp := int64(t.amp)
	for i := from; i < to; i++ {
		pos := b0 + i - t.start
		env := int64(32768)
		if pos < t.attack {
			env = int64(pos) * attack >> 16
		}
		if rest := t.length - pos; rest < t.release {
			env = min(env, int64(rest)*release>>16)
		}
		env = env * (65536 - int64(pos)*decay>>16) >> 16
		phase := t.inc * uint32(pos)
		v := int64(isin(phase))
		if t.overtone {
			v += int64(isin(2*phase)) / 4
		}
		mix[i] += int32((v * env >> 15) * amp >> 15)
	}
}

// compose picks the key, mode, tempo, chords and melody from seed and returns the tones sorted by
// start sample.
func compose(n, rate int, seed uint64) []tone {
	rng := splitmix64{state: seed ^ 0x5eed_a0d10}
	ms := func(v int) int { return max(1, v*rate/1000) }
	key := 53 + rng.intn(8) // MIDI F3 to C4
	minor := rng.intn(2) == 1
	// Chord progressions as each chord's root in semitones above the key and whether it is
	// minor; major keys take one of the first two, minor keys one of the last two.
	type chord struct {
		root  int
		minor bool
	}
	progressions := [4][4]chord{
		{{0, false}, {7, false}, {9, true}, {5, false}},  // I V vi IV
		{{0, false}, {5, false}, {9, true}, {7, false}},  // I IV vi V
		{{0, true}, {8, false}, {3, false}, {10, false}}, // i VI III VII
		{{0, true}, {5, true}, {8, false}, {7, false}},   // i iv VI V
	}
	prog := progressions[rng.intn(2)+2*b2i(minor)]
	scale := [5]int{0, 2, 4, 7, 9} // major pentatonic
	if minor {
		scale = [5]int{0, 3, 5, 7, 10}
	}
	beat := ms(rng.between(220, 380))
	const beatsPerChord = 8

	var melody, pad []tone
	// The pad: the chord's root, third and fifth an octave below the key, one chord per bar.
	for bar := 0; bar*beatsPerChord*beat < n; bar++ {
		c := prog[bar%len(prog)]
		third := 4
		if c.minor {
			third = 3
		}
		start := bar * beatsPerChord * beat
		length := min(beatsPerChord*beat, n-start)
		for _, iv := range [3]int{0, third, 7} {
			pad = append(pad, tone{
				start: start, length: length,
				inc: phaseStep(key-12+c.root+iv, rate), amp: 3600,
				attack: max(1, min(ms(120), length/2)), release: max(1, min(ms(250), length/2)),
			})
		}
	}
	// The melody: a random walk over two octaves of the pentatonic scale, one or two beats a
	// note, with the odd rest.
	degree := 3 + rng.intn(4)
	for start := 0; start < n; {
		beats := 1
		if rng.intn(4) == 0 {
			beats = 2
		}
		length := min(beats*beat, n-start)
		if rng.intn(6) != 0 {
			degree = min(9, max(0, degree+rng.between(-2, 2)))
			note := key + 12*(degree/5) + scale[degree%5]
			melody = append(melody, tone{
				start: start, length: length,
				inc: phaseStep(note, rate), amp: 9000,
				attack: max(1, min(ms(10), length/2)), release: max(1, min(ms(60), length/2)),
				decays: true, overtone: true,
			})
		}
		start += beats * beat
	}
	return mergeByStart(pad, melody)
}

// mergeByStart merges two slices already sorted by start.
func mergeByStart(a, b []tone) []tone {
	out := make([]tone, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].start <= b[0].start {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// phaseStep returns the per-sample phase increment of MIDI note m at rate, from an integer
// table of the equal-tempered octave above middle C in millihertz.
func phaseStep(m, rate int) uint32 {
	octave4 := [12]int64{261626, 277183, 293665, 311127, 329628, 349228,
		369994, 391995, 415305, 440000, 466164, 493883}
	k, i := (m-60)/12, (m-60)%12
	if i < 0 {
		k, i = k-1, i+12
	}
	f := octave4[i] // mHz
	if k >= 0 {
		f <<= k
	} else {
		f >>= -k
	}
	return uint32((f << 32) / (int64(rate) * 1000))
}

// b2i converts a bool to 0 or 1.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
