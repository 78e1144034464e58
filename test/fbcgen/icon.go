package fbcgen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// makeIcon draws an SVG of a few KB: a rounded background and a pile of
// translucent circles and strokes, like the vector logos that most published
// packages use. Icons are served as-is, so only their size and media type
// matter to a server; the drawing just keeps them honest SVG.
func makeIcon(r *rand.Rand) []byte {
	color := func() string { return fmt.Sprintf("#%06x", r.IntN(1<<24)) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 128 128" width="128" height="128">`+"\n")
	fmt.Fprintf(&b, `<rect width="128" height="128" rx="24" fill="%s"/>`+"\n", color())
	target := 2048 + r.IntN(3072)
	for b.Len() < target {
		if r.IntN(2) == 0 {
			fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="%d" fill="%s" fill-opacity="0.%d"/>`+"\n",
				r.IntN(128), r.IntN(128), 4+r.IntN(40), color(), 3+r.IntN(6))
		} else {
			fmt.Fprintf(&b, `<path d="M%d %d Q%d %d %d %d" fill="none" stroke="%s" stroke-width="%d" stroke-linecap="round"/>`+"\n",
				r.IntN(128), r.IntN(128), r.IntN(128), r.IntN(128), r.IntN(128), r.IntN(128), color(), 2+r.IntN(8))
		}
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}
