package media

import (
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
)

// The PNG layout. Pixels are 8-bit palette indices, and the image data is a zlib stream of
// deflate *stored* blocks: no compression, so the file's length is a formula of its width and
// height, and writing it is a copy. (Services' PNGs of detailed pictures are about as large: one
// to one and a half bytes a pixel.) Each stored block travels in its own IDAT chunk:
//
//	signature, IHDR, PLTE, IDAT × blocks, IEND
//
// where the first IDAT also holds the zlib header and the last the Adler-32 checksum.
const (
	pngSignature   = "\x89PNG\r\n\x1a\n"
	pngChunkExtra  = 12    // length, type and CRC around a chunk's data
	pngIHDRLen     = 13    // width, height, depth, colour type, compression, filter, interlace
	pngStoredMax   = 65535 // the most bytes a deflate stored block holds
	pngStoredExtra = 5     // a stored block's header: BFINAL/BTYPE byte, LEN, NLEN
	zlibHeaderLen  = 2
	zlibTrailerLen = 4 // Adler-32 of the uncompressed data
)

// pngRaw returns the length of the uncompressed image data: each row is a filter-type byte
// (0, none) and one byte a pixel.
func pngRaw(w, h int) int64 { return int64(h) * int64(1+w) }

// pngBlocks returns how many stored blocks carry raw bytes (at least one).
func pngBlocks(raw int64) int64 { return max(1, (raw+pngStoredMax-1)/pngStoredMax) }

// pngSize returns the exact length of the PNG renderPNG writes for a w×h picture.
func pngSize(w, h int) int64 {
	raw := pngRaw(w, h)
	blocks := pngBlocks(raw)
	return int64(len(pngSignature)) +
		pngChunkExtra + pngIHDRLen +
		pngChunkExtra + 3*paletteLen +
		blocks*(pngChunkExtra+pngStoredExtra) + zlibHeaderLen + raw + zlibTrailerLen +
		pngChunkExtra // IEND
}

// renderPNG draws spec's picture and writes it as a PNG of exactly pngSize bytes.
func renderPNG(spec ImageSpec) []byte {
	w, h := spec.Width, spec.Height
	raw := make([]byte, pngRaw(w, h))
	// Drawing at stride w+1 from raw[1] leaves byte 0 of every row, the filter type, at zero.
	pic := drawPicture(spec, raw[1:], w+1, true)

	out := make([]byte, 0, pngSize(w, h))
	out = append(out, pngSignature...)

	at := startChunk(&out, "IHDR")
	out = binary.BigEndian.AppendUint32(out, uint32(w))
	out = binary.BigEndian.AppendUint32(out, uint32(h))
	out = append(out, 8, 3, 0, 0, 0) // 8 bits, palette colour, deflate, adaptive filters, no interlace
	endChunk(&out, at)

	at = startChunk(&out, "PLTE")
	for _, c := range pic.pal {
		out = append(out, c.R, c.G, c.B)
	}
	endChunk(&out, at)

	blocks := pngBlocks(int64(len(raw)))
	rest := raw
	for i := range blocks {
		at = startChunk(&out, "IDAT")
		if i == 0 {
			// CMF 0x78: deflate with a 32 KiB window; FLG 0x01: no dictionary, fastest level,
			// and 0x7801 is a multiple of 31 as the check bits require.
			out = append(out, 0x78, 0x01)
		}
		n := min(len(rest), pngStoredMax)
		final := byte(0)
		if i == blocks-1 {
			final = 1
		}
		out = append(out, final, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		out = append(out, rest[:n]...)
		rest = rest[n:]
		if i == blocks-1 {
			out = binary.BigEndian.AppendUint32(out, adler32.Checksum(raw))
		}
		endChunk(&out, at)
	}
	endChunk(&out, startChunk(&out, "IEND"))
	return out
}

// startChunk appends a chunk's length (patched by endChunk) and type, and returns where the
// chunk starts.
func startChunk(out *[]byte, typ string) int {
	at := len(*out)
	*out = append(*out, 0, 0, 0, 0)
	*out = append(*out, typ...)
	return at
}

// endChunk patches the length of the chunk started at at and appends its CRC, which covers the
// type and the data.
func endChunk(out *[]byte, at int) {
	b := *out
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-8))
	*out = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[at+4:]))
}
