package emulator

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
)

// musicgen is the default catalog's audio-conditioned model: input_audio, a duration of 1 to
// 30 s (8 by default).
const musicgen = "meta/musicgen"

// wavOf is a WAV of d, as the emulator's own audio outputs are.
func wavOf(t testing.TB, d time.Duration) []byte {
	t.Helper()
	b, err := media.RenderWAV(media.AudioSpec{Duration: d, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wavSeconds is a served WAV's length from its header: the data chunk over the byte rate.
func wavSeconds(t testing.TB, b []byte) float64 {
	t.Helper()
	if len(b) < 44 || string(b[:4]) != "RIFF" || string(b[36:40]) != "data" {
		t.Fatalf("not a canonical WAV: %d bytes", len(b))
	}
	return float64(binary.LittleEndian.Uint32(b[40:44])) / float64(binary.LittleEndian.Uint32(b[28:32]))
}

// TestInputsAudioDuration: an audio-conditioned model's output has its input audio's duration
// (an upload, a data: URI, the emulator's own WAV output, or the 10 s stand-in), held to the
// model's bounds, unless the input names a duration; through a snapshot, the jobs keep it.
func TestInputsAudioDuration(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"manual", "skip", "real"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := inputsServer(t, func(c *Config) { setClock(c, mode) })
			n := 0
			run := func(in map[string]any) api.Job {
				t.Helper()
				n++
				in["prompt"], in["model_version"] = "the same tune as a string quartet", "melody-large"
				q := quote(t, s, "mg_test_all", musicgen, in)
				rec := generate(t, s, "mg_test_all", "tune-"+strings.Repeat("x", n), q, in, "")
				if rec.Code != 202 && rec.Code != 200 {
					t.Fatalf("generate %v: %d %s", in, rec.Code, rec.Body)
				}
				job := decode[api.Job](t, rec)
				call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "1m"})
				job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "mg_test_all", nil))
				for mode == "real" && (job.Status == "queued" || job.Status == "running") {
					job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID+"?wait=true", "mg_test_all", nil))
				}
				if job.Status != "succeeded" || len(job.Outputs) != 1 {
					t.Fatalf("job = %+v", job)
				}
				return job
			}
			check := func(what string, job api.Job, want float64) {
				t.Helper()
				o := job.Outputs[0]
				file := call(t, s, "GET", strings.TrimPrefix(o.URL, "http://example.com"), "", nil)
				if o.Duration != want || file.Code != 200 || int64(file.Body.Len()) != o.SizeBytes || wavSeconds(t, file.Body.Bytes()) != want {
					t.Errorf("%s: output of %v s, file %d (%d bytes); want %v s", what, o.Duration, file.Code, file.Body.Len(), want)
				}
			}
			up := decode[api.Upload](t, uploadRaw(t, s, wavOf(t, 3500*time.Millisecond), "audio/wav"))
			if up.Duration != 3.5 {
				t.Fatalf("upload = %+v", up)
			}
			uploaded := run(map[string]any{"input_audio": up.URL})
			check("an uploaded 3.5 s WAV", uploaded, 3.5)
			check("the emulator's own WAV output", run(map[string]any{"input_audio": uploaded.Outputs[0].URL}), 3.5)
			inline := "data:audio/wav;base64," + base64.StdEncoding.EncodeToString(wavOf(t, 2*time.Second))
			check("a 2 s data: URI", run(map[string]any{"input_audio": inline}), 2)
			check("an asked duration", run(map[string]any{"input_audio": up.URL, "duration": 12}), 12)
			check("the stand-in", run(map[string]any{"input_audio": "https://example.com/tune.wav"}), 10)
			long := decode[api.Upload](t, uploadRaw(t, s, wavOf(t, 45*time.Second), "audio/wav"))
			longJob := run(map[string]any{"input_audio": long.URL})
			check("45 s, past the model's 30", longJob, 30)
			short := decode[api.Upload](t, uploadRaw(t, s, wavOf(t, 400*time.Millisecond), "audio/wav"))
			check("0.4 s, under the model's 1", run(map[string]any{"input_audio": short.URL}), 1)
			check("no input audio", run(map[string]any{}), 8)

			snap := call(t, s, "GET", "/_emulator/snapshot", "", nil)
			call(t, s, "POST", "/_emulator/reset", "", nil)
			if rec := call(t, s, "PUT", "/_emulator/snapshot", "", snap.Body.String()); rec.Code != 200 {
				t.Fatalf("restore: %d %s", rec.Code, rec.Body)
			}
			for _, j := range []struct {
				job  api.Job
				want float64
			}{{uploaded, 3.5}, {longJob, 30}} {
				check("restored", decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+j.job.ID, "mg_test_all", nil)), j.want)
			}
		})
	}
}
