package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// inputs makes -n jobs whose input is about -size bytes (an image-to-image model's image_url),
// one after another, on an emulator with a manual clock, stepping the clock after each so that
// every job finishes and is retained; it reads the emulator's resident memory before and
// after. A job's answer carries its input, so what the emulator keeps of large inputs shows
// here.
func inputs(ctx context.Context, args []string) error {
	fs := newFlags("inputs")
	n := fs.intIn("n", 360, 1, 10_000, "jobs to make")
	size := fs.intIn("size", 1_040_000, 1, 1_040_000, "bytes of each input's image_url (the body limit is 1 MiB)")
	model := fs.String("model", "fal-ai/flux/dev/image-to-image", "a model whose input has image_url and prompt")
	tg, err := fs.parse(args)
	if err != nil {
		return err
	}
	idle, err := rssKB(tg.pid)
	if err != nil {
		return err
	}
	c, err := openAdmin(tg.addr, true)
	if err != nil {
		return err
	}
	defer c.close()
	headers := allKey
	url := "https://example.com/" + strings.Repeat("a", max(0, *size-20))
	peak := idle
	for i := range *n {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Each input differs, as real ones would.
		a := api{model: *model, input: `{"prompt":"job ` + strconv.Itoa(i) + `","image_url":"` + url + `"}`}
		if _, _, err := a.flow(c, headers, "inputs-"+strconv.Itoa(i), false); err != nil {
			return err
		}
		if _, err := control(c, "POST", "/_emulator/clock", `{"advance":"10s"}`); err != nil {
			return err
		}
		if rss, err := rssKB(tg.pid); err == nil {
			peak = max(peak, rss)
		}
	}
	after, err := rssKB(tg.pid)
	if err != nil {
		return err
	}
	held, err := countJobs(c, headers, "succeeded")
	if err != nil {
		return err
	}
	row(fmt.Sprintf("%d jobs with %s inputs: RSS", *n, mb(int64(*size)/1024)), mb(after), "levels off",
		fmt.Sprintf("idle %s, peak %s; %d finished jobs still held", mb(idle), mb(peak), held))
	return nil
}
