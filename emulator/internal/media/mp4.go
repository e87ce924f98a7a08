package media

import "encoding/binary"

// mp4Track is what the muxer needs to write a single-track H.264 MP4.
type mp4Track struct {
	width, height int
	sps, pps      [][]byte // the parameter sets, the first of each the one the profile is read from
	timescale     uint32   // ticks per second of the media (mdhd)
	durations     []uint32 // per sample, in timescale ticks
	sizes         []uint32 // per sample, in bytes
	sync          []bool   // per sample: an IDR picture
	chunk         int      // samples per chunk (the last chunk may hold fewer)
}

// movieTimescale is the mvhd/tkhd timescale: milliseconds, the usual choice.
const movieTimescale = 1000

// box appends ISO BMFF boxes to a byte slice. Start returns the box's offset so End can patch
// its size once the contents are written.
type box struct{ b []byte }

func (w *box) start(typ string) int {
	at := len(w.b)
	w.b = append(w.b, 0, 0, 0, 0)
	w.b = append(w.b, typ...)
	return at
}

// fullStart starts a FullBox with its version and 24-bit flags.
func (w *box) fullStart(typ string, version uint8, flags uint32) int {
	at := w.start(typ)
	w.u32(uint32(version)<<24 | flags&0xffffff)
	return at
}

func (w *box) end(at int) {
	binary.BigEndian.PutUint32(w.b[at:], uint32(len(w.b)-at))
}

func (w *box) u8(v uint8)   { w.b = append(w.b, v) }
func (w *box) u16(v uint16) { w.b = binary.BigEndian.AppendUint16(w.b, v) }
func (w *box) u32(v uint32) { w.b = binary.BigEndian.AppendUint32(w.b, v) }
func (w *box) zeros(n int)  { w.b = append(w.b, make([]byte, n)...) }

// matrix writes the identity transformation matrix of mvhd and tkhd.
func (w *box) matrix() {
	for _, v := range [9]uint32{0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000} {
		w.u32(v)
	}
}

// writeMP4 lays out ftyp, moov and mdat (moov first, so a player can start before the whole
// file has arrived) and returns the file, in a slice of capacity size (the caller counts it, so
// that a kept file holds no spare memory). writeSamples must append exactly the samples'
// bytes, in order, to its argument.
func writeMP4(t *mp4Track, size int64, writeSamples func([]byte) []byte) []byte {
	var media uint64
	for _, d := range t.durations {
		media += uint64(d)
	}
	movieDur := uint32((media*movieTimescale + uint64(t.timescale)/2) / uint64(t.timescale))

	w := &box{b: make([]byte, 0, size)}
	ftyp := w.start("ftyp")
	w.b = append(w.b, "isom"...)
	w.u32(0x200)
	w.b = append(w.b, "isomiso2avc1mp41"...)
	w.end(ftyp)

	moov := w.start("moov")
	mvhd := w.fullStart("mvhd", 0, 0)
	w.u32(0) // creation_time: fixed, so output is deterministic
	w.u32(0) // modification_time
	w.u32(movieTimescale)
	w.u32(movieDur)
	w.u32(0x00010000) // rate 1.0
	w.u16(0x0100)     // volume 1.0
	w.zeros(10)       // reserved
	w.matrix()
	w.zeros(24) // pre_defined
	w.u32(2)    // next_track_ID
	w.end(mvhd)

	trak := w.start("trak")
	tkhd := w.fullStart("tkhd", 0, 3) // enabled, in movie
	w.u32(0)                          // creation_time
	w.u32(0)                          // modification_time
	w.u32(1)                          // track_ID
	w.u32(0)                          // reserved
	w.u32(movieDur)
	w.zeros(8) // reserved
	w.u16(0)   // layer
	w.u16(0)   // alternate_group
	w.u16(0)   // volume: 0 for video
	w.u16(0)   // reserved
	w.matrix()
	w.u32(uint32(t.width) << 16) // 16.16 fixed point
	w.u32(uint32(t.height) << 16)
	w.end(tkhd)

	mdia := w.start("mdia")
	mdhd := w.fullStart("mdhd", 0, 0)
	w.u32(0) // creation_time
	w.u32(0) // modification_time
	w.u32(t.timescale)
	w.u32(uint32(media))
	w.u16(0x55c4) // language "und", packed ISO 639-2/T
	w.u16(0)      // pre_defined
	w.end(mdhd)

	hdlr := w.fullStart("hdlr", 0, 0)
	w.u32(0) // pre_defined
	w.b = append(w.b, "vide"...)
	w.zeros(12) // reserved
	w.b = append(w.b, "VideoHandler\x00"...)
	w.end(hdlr)

	minf := w.start("minf")
	vmhd := w.fullStart("vmhd", 0, 1)
	w.zeros(8) // graphicsmode, opcolor
	w.end(vmhd)
	dinf := w.start("dinf")
	dref := w.fullStart("dref", 0, 0)
	w.u32(1)
	w.end(w.fullStart("url ", 0, 1)) // media data is in this file
	w.end(dref)
	w.end(dinf)

	stbl := w.start("stbl")
	writeStsd(w, t)
	writeStts(w, t.durations)

	stss := w.fullStart("stss", 0, 0)
	countAt := len(w.b)
	w.u32(0)
	var syncCount uint32
	for i, s := range t.sync {
		if s {
			w.u32(uint32(i + 1))
			syncCount++
		}
	}
	binary.BigEndian.PutUint32(w.b[countAt:], syncCount)
	w.end(stss)

	n := len(t.sizes)
	chunks := (n + t.chunk - 1) / t.chunk
	stsc := w.fullStart("stsc", 0, 0)
	if n%t.chunk == 0 || chunks == 1 {
		w.u32(1)
		w.u32(1)                       // first_chunk
		w.u32(uint32(min(n, t.chunk))) // samples_per_chunk
		w.u32(1)                       // sample_description_index
	} else {
		w.u32(2)
		w.u32(1)
		w.u32(uint32(t.chunk))
		w.u32(1)
		w.u32(uint32(chunks))
		w.u32(uint32(n % t.chunk))
		w.u32(1)
	}
	w.end(stsc)

	stsz := w.fullStart("stsz", 0, 0)
	w.u32(0) // sample_size: sizes vary
	w.u32(uint32(n))
	for _, s := range t.sizes {
		w.u32(s)
	}
	w.end(stsz)

	// Chunk offsets are relative to the mdat payload here and moved once moov's size is known.
	stco := w.fullStart("stco", 0, 0)
	w.u32(uint32(chunks))
	offsetsAt := len(w.b)
	var off uint32
	for i, s := range t.sizes {
		if i%t.chunk == 0 {
			w.u32(off)
		}
		off += s
	}
	w.end(stco)

	w.end(stbl)
	w.end(minf)
	w.end(mdia)
	w.end(trak)
	w.end(moov)

	mdat := w.start("mdat")
	base := uint32(len(w.b))
	for i := range chunks {
		p := w.b[offsetsAt+4*i:]
		binary.BigEndian.PutUint32(p, binary.BigEndian.Uint32(p)+base)
	}
	w.b = writeSamples(w.b)
	w.end(mdat)
	return w.b
}

// writeStsd writes the sample description: one avc1 entry with its avcC configuration.
func writeStsd(w *box, t *mp4Track) {
	stsd := w.fullStart("stsd", 0, 0)
	w.u32(1)
	avc1 := w.start("avc1")
	w.zeros(6)  // reserved
	w.u16(1)    // data_reference_index
	w.zeros(16) // pre_defined, reserved
	w.u16(uint16(t.width))
	w.u16(uint16(t.height))
	w.u32(0x00480000) // 72 dpi
	w.u32(0x00480000)
	w.u32(0) // reserved
	w.u16(1) // frame_count
	var name [32]byte
	name[0] = byte(copy(name[1:], "mediagen-emulator"))
	w.b = append(w.b, name[:]...)
	w.u16(0x0018) // depth: colour, no alpha
	w.u16(0xffff) // pre_defined = -1

	avcC := w.start("avcC")
	w.u8(1) // configurationVersion
	sps := t.sps[0]
	w.u8(sps[1])   // AVCProfileIndication
	w.u8(sps[2])   // profile_compatibility
	w.u8(sps[3])   // AVCLevelIndication
	w.u8(0xfc | 3) // lengthSizeMinusOne: 4-byte NAL lengths
	w.u8(0xe0 | uint8(len(t.sps)))
	for _, p := range t.sps {
		w.u16(uint16(len(p)))
		w.b = append(w.b, p...)
	}
	w.u8(uint8(len(t.pps)))
	for _, p := range t.pps {
		w.u16(uint16(len(p)))
		w.b = append(w.b, p...)
	}
	if p := sps[1]; p == 100 || p == 110 || p == 122 || p == 144 {
		// High profiles add chroma format and bit depths (ISO 14496-15 5.3.3.1.2); the
		// fixtures are 8-bit 4:2:0.
		w.u8(0xfc | 1)
		w.u8(0xf8)
		w.u8(0xf8)
		w.u8(0)
	}
	w.end(avcC)

	// Square pixels, stated so that no player guesses otherwise.
	pasp := w.start("pasp")
	w.u32(1)
	w.u32(1)
	w.end(pasp)
	w.end(avc1)
	w.end(stsd)
}

// writeStts writes the decoding time-to-sample table, run-length coded.
func writeStts(w *box, durations []uint32) {
	stts := w.fullStart("stts", 0, 0)
	countAt := len(w.b)
	w.u32(0)
	var entries uint32
	for i := 0; i < len(durations); {
		j := i
		for j < len(durations) && durations[j] == durations[i] {
			j++
		}
		w.u32(uint32(j - i))
		w.u32(durations[i])
		entries++
		i = j
	}
	binary.BigEndian.PutUint32(w.b[countAt:], entries)
	w.end(stts)
}
