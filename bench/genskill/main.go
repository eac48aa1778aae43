// Command genskill writes a synthetic skill folder for the `skill pack`
// benchmark: a valid SKILL.md and a bundle/templates/ folder of real PNG
// files (screen-crop-like: flat UI panels, text-like strokes and noise, as
// recorded templates are), up to the requested total size. The output is
// deterministic for a given seed.
//
//	go run ./bench/genskill -out DIR -mb 200
package main

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("out", "", "skill folder to create (its base name is the skill name)")
	mb := flag.Int("mb", 200, "approximate total size in MB")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if *out == "" {
		log.Fatal("-out is required")
	}
	name := filepath.Base(*out)
	tdir := filepath.Join(*out, "bundle", "templates")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		log.Fatal(err)
	}
	md := fmt.Sprintf("---\nname: %s\ndescription: Synthetic benchmark skill with many PNG templates.\n---\n\n# Benchmark\n\nTemplates live in bundle/templates/.\n", name)
	if err := os.WriteFile(filepath.Join(*out, "SKILL.md"), []byte(md), 0o644); err != nil {
		log.Fatal(err)
	}
	wf := []byte("{\"schema_version\": 2, \"name\": \"benchmark\", \"steps\": []}\n")
	if err := os.WriteFile(filepath.Join(*out, "bundle", "workflow.json"), wf, 0o644); err != nil {
		log.Fatal(err)
	}
	r := rand.New(rand.NewPCG(*seed, 42))
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	var total int64
	for i := 0; total < int64(*mb)*1_000_000; i++ {
		img := template(r)
		var buf bytes.Buffer
		if err := enc.Encode(&buf, img); err != nil {
			log.Fatal(err)
		}
		p := filepath.Join(tdir, fmt.Sprintf("step_%04d.png", i))
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
		total += int64(buf.Len())
	}
	fmt.Printf("%s: %d bytes of PNG templates\n", *out, total)
}

// template draws a 480x360 crop: a flat panel with a few buttons, some
// text-like strokes and a noisy photo-like region, like a screenshot crop.
func template(r *rand.Rand) image.Image {
	const w, h = 480, 360
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	bg := color.NRGBA{uint8(200 + r.IntN(55)), uint8(200 + r.IntN(55)), uint8(200 + r.IntN(55)), 255}
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = bg.R, bg.G, bg.B, 255
	}
	for range 4 + r.IntN(4) { // buttons and panels
		x0, y0 := r.IntN(w-80), r.IntN(h-30)
		c := color.NRGBA{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256)), 255}
		for y := y0; y < y0+20+r.IntN(40) && y < h; y++ {
			for x := x0; x < x0+60+r.IntN(120) && x < w; x++ {
				img.SetNRGBA(x, y, c)
			}
		}
	}
	for range 200 + r.IntN(200) { // text-like strokes
		x0, y0 := r.IntN(w-8), r.IntN(h-12)
		for k := range 8 {
			img.SetNRGBA(x0+r.IntN(8), y0+k, color.NRGBA{20, 20, 20, 255})
		}
	}
	// A photo-like noisy region covering most of the crop: this is what
	// keeps real screen crops from compressing well.
	nx, ny := r.IntN(w/4), r.IntN(h/4)
	for y := ny; y < ny+h*3/4 && y < h; y++ {
		for x := nx; x < nx+w*3/4 && x < w; x++ {
			v := r.Uint32()
			img.SetNRGBA(x, y, color.NRGBA{uint8(v), uint8(v >> 8), uint8(v >> 16), 255})
		}
	}
	return img
}
