package fbc

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// blockTree decodes a YAML document into the tree go.yaml.in/yaml/v2
// decodes it into (maps of map[any]any, sequences of []any, and the scalars
// yaml.v2 resolves), for the YAML that catalogs are written in: block
// mappings and sequences as opm and sigs.k8s.io/yaml write them, with
// plain, quoted and literal scalars. yaml.v2 spends most of reading a
// catalog on its general machinery (tokens, events, nodes, reflection);
// this reads the same text in one pass. Each rule is yaml.v2's scanner's,
// for the part it covers. It reports false for anything else: comments,
// anchors, aliases, tags, flow collections other than {} and [], folded
// scalars, explicit keys, tabs, characters yaml.v2 treats as line breaks or
// refuses, text that yaml.v2 would reject; the caller then leaves the
// document to yaml.v2. FuzzBlockTree holds it to yaml.v2's answer.
func blockTree(text []byte) (any, bool) {
	if !plainPrintable(text) {
		return nil, false
	}
	p := blockParser{src: text[:len(text):len(text)]}
	indent, body, ok := p.peek()
	if !ok || indent != 0 || !p.isKey(body) {
		return nil, false
	}
	m, ok := p.mapping(0, body)
	if !ok || !p.atEnd() {
		return nil, false
	}
	return m, true
}

// plainPrintable says whether text holds nothing but line feeds and
// characters yaml.v2 reads as printable, none of which it takes for a line
// break or a byte order mark.
func plainPrintable(text []byte) bool {
	for i := 0; i < len(text); {
		b := text[i]
		if b < utf8.RuneSelf {
			if b != '\n' && (b < 0x20 || b == 0x7f) {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		switch {
		case r == utf8.RuneError && size == 1, r < 0xa0, r == 0x2028, r == 0x2029, r == 0xfeff,
			r >= 0xd800 && r < 0xe000, r == 0xfffe, r == 0xffff:
			return false
		}
		i += size
	}
	return true
}

type blockParser struct {
	src []byte
	// pos is where the line to read next starts.
	pos int
}

// peek skips blank lines and returns the indentation and the text of the
// next line, without its line feed; false at the end of the document or on
// a comment line.
func (p *blockParser) peek() (int, []byte, bool) {
	for p.pos < len(p.src) {
		end := p.lineEnd(p.pos)
		indent := 0
		for p.pos+indent < end && p.src[p.pos+indent] == ' ' {
			indent++
		}
		if p.pos+indent == end {
			p.pos = min(end+1, len(p.src))
			continue
		}
		body := p.src[p.pos+indent : end]
		if body[0] == '#' {
			return 0, nil, false
		}
		return indent, body, true
	}
	return 0, nil, false
}

// atEnd says whether nothing but blank lines is left.
func (p *blockParser) atEnd() bool {
	_, _, ok := p.peek()
	return !ok && p.pos >= len(p.src)
}

func (p *blockParser) lineEnd(from int) int {
	if i := bytes.IndexByte(p.src[from:], '\n'); i >= 0 {
		return from + i
	}
	return len(p.src)
}

// nextLine moves to the line after the one off is in.
func (p *blockParser) nextLine(off int) { p.pos = min(p.lineEnd(off)+1, len(p.src)) }

// offset is where b, a slice of src, starts in it.
func (p *blockParser) offset(b []byte) int { return cap(p.src) - cap(b) }

func isDash(body []byte) bool { return body[0] == '-' && (len(body) == 1 || body[1] == ' ') }

// mapping reads a block mapping whose keys stand at column col, the first
// of which starts body, the text of the current line from that column.
func (p *blockParser) mapping(col int, body []byte) (map[any]any, bool) {
	m := map[any]any{}
	for {
		if !p.entry(m, col, body) {
			return nil, false
		}
		indent, next, ok := p.peek()
		if !ok {
			return m, p.atEnd()
		}
		if indent < col {
			return m, true
		}
		if indent > col || !p.isKey(next) {
			return nil, false
		}
		body = next
	}
}

// entry reads the mapping entry that starts body into m.
func (p *blockParser) entry(m map[any]any, col int, body []byte) bool {
	key, rest, ok := p.key(body)
	if !ok {
		return false
	}
	var v any
	switch {
	case len(rest) == 0:
		p.nextLine(p.offset(body))
		indent, next, more := p.peek()
		switch {
		case !more:
			if !p.atEnd() {
				return false
			}
		case indent > col && isDash(next):
			v, ok = p.sequence(indent, false)
		case indent > col && p.isKey(next):
			v, ok = p.mapping(indent, next)
		case indent > col:
			return false // a scalar on the next line
		case indent == col && isDash(next):
			v, ok = p.sequence(col, true)
		}
	case rest[0] == ' ':
		for len(rest) > 0 && rest[0] == ' ' {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			return false
		}
		v, ok = p.inline(rest, col)
	default:
		return false
	}
	if !ok {
		return false
	}
	m[key] = v
	return true
}

// sequence reads a block sequence whose entries stand at column col; a
// compact one (at its mapping's column) ends at a line that is not an
// entry.
func (p *blockParser) sequence(col int, compact bool) ([]any, bool) {
	s := []any{}
	for {
		indent, body, ok := p.peek()
		if !ok {
			return s, p.atEnd()
		}
		if indent < col || (compact && indent == col && !isDash(body)) {
			return s, true
		}
		if indent > col || !isDash(body) || len(body) < 3 || body[2] == ' ' {
			return nil, false
		}
		rest := body[2:]
		var v any
		switch {
		case isDash(rest):
			return nil, false
		case p.isKey(rest):
			v, ok = p.mapping(col+2, rest)
		default:
			v, ok = p.inline(rest, col)
		}
		if !ok {
			return nil, false
		}
		s = append(s, v)
	}
}

// isKey says whether body starts with an implicit key: a scalar on one
// line followed by ':' and a space or the line's end.
func (p *blockParser) isKey(body []byte) bool {
	_, _, ok := p.key(body)
	return ok
}

// key reads the implicit key that starts body, resolved, and returns what
// follows its ':'.
func (p *blockParser) key(body []byte) (any, []byte, bool) {
	switch body[0] {
	case '\'', '"':
		s, end, ok := quotedLine(body)
		if !ok || end >= len(body) || body[end] != ':' || (end+1 < len(body) && body[end+1] != ' ') {
			return nil, nil, false
		}
		return s, body[end+1:], true
	}
	if !plainStart(body) {
		return nil, nil, false
	}
	i := 0
	for ; i < len(body); i++ {
		if body[i] == ':' && (i+1 == len(body) || body[i+1] == ' ') {
			break
		}
		if body[i] == '#' && body[i-1] == ' ' {
			return nil, nil, false
		}
	}
	// yaml.v2 looks for a key's ':' within 1024 characters.
	if i == len(body) || i > 1000 || body[i-1] == ' ' {
		return nil, nil, false
	}
	text := string(body[:i])
	if text == "<<" {
		return nil, nil, false // a merge
	}
	k := resolvePlain(text)
	if f, ok := k.(float64); ok && math.IsNaN(f) {
		return nil, nil, false
	}
	return k, body[i+1:], true
}

// plainStart says whether body may start a plain scalar this parser reads:
// not with an indicator.
func plainStart(body []byte) bool {
	return strings.IndexByte("-?:,[]{}#&*!|>'\"%@`", body[0]) < 0
}

// quotedLine reads the quoted scalar that starts body and ends on the same
// line, returning it and where its closing quote ends.
func quotedLine(body []byte) (string, int, bool) {
	var s []byte
	single := body[0] == '\''
	for i := 1; i < len(body); {
		c := body[i]
		switch {
		case single && c == '\'' && i+1 < len(body) && body[i+1] == '\'':
			s = append(s, '\'')
			i += 2
		case c == body[0]:
			return string(s), i + 1, true
		case !single && c == '\\':
			var ok bool
			if s, i, ok = appendEscape(s, body, i); !ok {
				return "", 0, false
			}
		default:
			s = append(s, c)
			i++
		}
	}
	return "", 0, false
}

// inline reads the value that starts rest, after "key: " or "- ", in a
// block at column indent, and moves past it.
func (p *blockParser) inline(rest []byte, indent int) (any, bool) {
	switch rest[0] {
	case '|':
		return p.literal(rest, indent)
	case '"', '\'':
		return p.quoted(rest, indent)
	case '{', '[':
		if string(rest) == "{}" {
			p.nextLine(p.offset(rest))
			return map[any]any{}, true
		}
		if string(rest) == "[]" {
			p.nextLine(p.offset(rest))
			return []any{}, true
		}
		return nil, false
	}
	if !plainStart(rest) {
		return nil, false
	}
	return p.plain(rest, indent)
}

// plainLine checks a line of a plain scalar: nothing in it that would end
// the scalar (": ", a ':' at its end, " #").
func plainLine(b []byte) bool {
	for i, c := range b {
		switch {
		case c == ':' && (i+1 == len(b) || b[i+1] == ' '):
			return false
		case c == '#' && i > 0 && b[i-1] == ' ':
			return false
		}
	}
	return true
}

// plain reads a plain scalar, which may go on over lines indented deeper
// than the block, folded as yaml.v2 folds them, and resolves it.
func (p *blockParser) plain(first []byte, indent int) (any, bool) {
	if !plainLine(first) {
		return nil, false
	}
	text := strings.TrimRight(string(first), " ")
	var folded []byte
	p.nextLine(p.offset(first))
	breaks := 0
	for p.pos < len(p.src) {
		end := p.lineEnd(p.pos)
		col := 0
		for p.pos+col < end && p.src[p.pos+col] == ' ' {
			col++
		}
		if p.pos+col == end {
			breaks++
			p.pos = min(end+1, len(p.src))
			continue
		}
		if col <= indent {
			break
		}
		line := p.src[p.pos+col : end]
		if line[0] == '#' || !plainLine(line) {
			return nil, false
		}
		if folded == nil {
			folded = append(folded, text...)
		}
		if breaks == 0 {
			folded = append(folded, ' ')
		}
		for ; breaks > 0; breaks-- {
			folded = append(folded, '\n')
		}
		folded = append(folded, bytes.TrimRight(line, " ")...)
		p.pos = min(end+1, len(p.src))
	}
	if folded != nil {
		text = string(folded)
	}
	return resolvePlain(text), true
}

// quoted reads a quoted scalar, which may go on over lines indented deeper
// than the block, folding its line breaks as yaml.v2 does.
func (p *blockParser) quoted(rest []byte, indent int) (any, bool) {
	src, quote := p.src, rest[0]
	single := quote == '\''
	i := p.offset(rest) + 1
	var s, whitespace []byte
	for {
		if i >= len(src) {
			return nil, false
		}
		leading := false // line breaks were read
		breaks := 0      // line feeds after the first
		for i < len(src) && src[i] != ' ' && src[i] != '\n' {
			c := src[i]
			switch {
			case single && c == '\'' && i+1 < len(src) && src[i+1] == '\'':
				s = append(s, '\'')
				i += 2
				continue
			case c == quote:
			case !single && c == '\\' && i+1 < len(src) && src[i+1] == '\n':
				i += 2
				leading = true
				if !p.continues(i, indent) {
					return nil, false
				}
			case !single && c == '\\':
				var ok bool
				if s, i, ok = appendEscape(s, src, i); !ok {
					return nil, false
				}
				continue
			default:
				s = append(s, c)
				i++
				continue
			}
			break
		}
		if i < len(src) && src[i] == quote {
			break
		}
		escapedBreak := leading
		for i < len(src) && (src[i] == ' ' || src[i] == '\n') {
			switch {
			case src[i] == ' ' && !leading:
				whitespace = append(whitespace, ' ')
			case src[i] == '\n' && !leading:
				whitespace = whitespace[:0]
				leading = true
				if !p.continues(i+1, indent) {
					return nil, false
				}
			case src[i] == '\n':
				breaks++
				if !p.continues(i+1, indent) {
					return nil, false
				}
			}
			i++
		}
		switch {
		case leading && !escapedBreak && breaks == 0:
			s = append(s, ' ')
		case leading:
			for ; breaks > 0; breaks-- {
				s = append(s, '\n')
			}
		default:
			s = append(s, whitespace...)
			whitespace = whitespace[:0]
		}
	}
	// The rest of the line after the closing quote must be empty.
	end := p.lineEnd(i)
	for j := i + 1; j < end; j++ {
		if src[j] != ' ' {
			return nil, false
		}
	}
	p.pos = min(end+1, len(src))
	return string(s), true
}

// continues checks the line that starts at off, inside a quoted scalar:
// blank, or indented deeper than the block at column indent.
func (p *blockParser) continues(off, indent int) bool {
	end := p.lineEnd(off)
	col := 0
	for off+col < end && p.src[off+col] == ' ' {
		col++
	}
	return off+col == end || col > indent
}

// appendEscape decodes the escape sequence at src[i] ('\\') of a
// double-quoted scalar onto s, as yaml.v2 does, and returns where it ends.
func appendEscape(s, src []byte, i int) ([]byte, int, bool) {
	if i+1 >= len(src) {
		return nil, 0, false
	}
	var simple string
	size := 0
	switch src[i+1] {
	case '0':
		simple = "\x00"
	case 'a':
		simple = "\a"
	case 'b':
		simple = "\b"
	case 't':
		simple = "\t"
	case 'n':
		simple = "\n"
	case 'v':
		simple = "\v"
	case 'f':
		simple = "\f"
	case 'r':
		simple = "\r"
	case 'e':
		simple = "\x1b"
	case ' ':
		simple = " "
	case '"':
		simple = "\""
	case '\'':
		simple = "'"
	case '\\':
		simple = "\\"
	case 'N':
		simple = "\u0085"
	case '_':
		simple = "\u00a0"
	case 'L':
		simple = "\u2028"
	case 'P':
		simple = "\u2029"
	case 'x':
		size = 2
	case 'u':
		size = 4
	case 'U':
		size = 8
	default:
		return nil, 0, false
	}
	if size == 0 {
		return append(s, simple...), i + 2, true
	}
	if i+2+size > len(src) {
		return nil, 0, false
	}
	code, err := strconv.ParseUint(string(src[i+2:i+2+size]), 16, 32)
	if err != nil || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff {
		return nil, 0, false
	}
	for _, c := range src[i+2 : i+2+size] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
			return nil, 0, false
		}
	}
	return utf8.AppendRune(s, rune(code)), i + 2 + size, true
}

// literal reads a literal block scalar ("|", "|-" or "|+") whose header is
// rest, its content indented deeper than the block at column indent.
func (p *blockParser) literal(rest []byte, indent int) (any, bool) {
	chomp := 0
	switch string(rest) {
	case "|":
	case "|-":
		chomp = -1
	case "|+":
		chomp = 1
	default:
		return nil, false
	}
	src := p.src
	i := p.lineEnd(p.offset(rest)) + 1
	if i >= len(src) {
		return nil, false
	}
	// The content's indentation is its first line's: a blank line before
	// it could change that, so it is left to yaml.v2.
	width := 0
	for i+width < len(src) && src[i+width] == ' ' {
		width++
	}
	if i+width >= len(src) || src[i+width] == '\n' || width <= indent {
		return nil, false
	}
	var s, lineBreak []byte
	breaks := 0
	for {
		// At a line whose first width characters are spaces.
		s = append(s, lineBreak...)
		for ; breaks > 0; breaks-- {
			s = append(s, '\n')
		}
		end := p.lineEnd(i)
		s = append(s, src[i+width:end]...)
		lineBreak = lineBreak[:0]
		if end < len(src) {
			lineBreak = append(lineBreak, '\n')
		}
		i = min(end+1, len(src))
		// Blank lines, then the next line: content if indented by width.
		for {
			col := 0
			for i+col < len(src) && col < width && src[i+col] == ' ' {
				col++
			}
			if i+col < len(src) && src[i+col] == '\n' {
				breaks++
				i += col + 1
				continue
			}
			if col == width && i+col < len(src) {
				break
			}
			if chomp != -1 {
				s = append(s, lineBreak...)
			}
			if chomp == 1 {
				for ; breaks > 0; breaks-- {
					s = append(s, '\n')
				}
			}
			p.pos = i
			return string(s), true
		}
	}
}

// resolvePlain gives a plain scalar the value yaml.v2 decodes it to in an
// interface{}: null, a bool, an int, a float64, or the string itself (a
// timestamp stays a string there too).
func resolvePlain(in string) any {
	if in == "" {
		return nil
	}
	switch in[0] {
	case 'y', 'Y', 'n', 'N', 't', 'T', 'f', 'F', 'o', 'O', '~':
		if v, ok := yamlWords[in]; ok {
			return v
		}
		return in
	case '.':
		if v, ok := yamlWords[in]; ok {
			return v
		}
		if f, err := strconv.ParseFloat(in, 64); err == nil {
			return f
		}
		return in
	case '+', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if v, ok := yamlWords[in]; ok {
			return v
		}
		if isTimestamp(in) {
			return in
		}
		plain := strings.ReplaceAll(in, "_", "")
		if n, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return int(n)
		}
		if n, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return n
		}
		if yamlFloat(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return f
			}
		}
		if digits, ok := strings.CutPrefix(plain, "0b"); ok {
			if n, err := strconv.ParseInt(digits, 2, 64); err == nil {
				return int(n)
			}
			if n, err := strconv.ParseUint(digits, 2, 64); err == nil {
				return n
			}
		} else if digits, ok := strings.CutPrefix(plain, "-0b"); ok {
			if n, err := strconv.ParseInt("-"+digits, 2, 64); err == nil {
				return int(n)
			}
		}
	}
	return in
}

// yamlWords are the plain scalars yaml.v2 resolves by name, and what to.
var yamlWords = func() map[string]any {
	m := map[string]any{}
	for _, group := range []struct {
		value any
		words []string
	}{
		{true, []string{"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}},
		{false, []string{"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}},
		{nil, []string{"~", "null", "Null", "NULL"}},
		{math.NaN(), []string{".nan", ".NaN", ".NAN"}},
		{math.Inf(1), []string{".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"}},
		{math.Inf(-1), []string{"-.inf", "-.Inf", "-.INF"}},
	} {
		for _, w := range group.words {
			m[w] = group.value
		}
	}
	return m
}()

// yamlFloat says whether s has the shape of a YAML float:
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
func yamlFloat(s string) bool {
	digits := func(i int) int {
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return j
	}
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	if i < len(s) && s[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return false
		}
		i = j
	} else {
		j := digits(i)
		if j == i {
			return false
		}
		i = j
		if i < len(s) && s[i] == '.' {
			i = digits(i + 1)
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		j := digits(i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

// timestampLayouts are the layouts yaml.v2 tries on a plain scalar that
// starts with four digits and '-'.
var timestampLayouts = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// isTimestamp says whether yaml.v2 takes s for a timestamp.
func isTimestamp(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, layout := range timestampLayouts {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}
