package catalogcli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/catalogd/catalogd/internal/termtext"
)

// answer is one catalog's answer: a wire type of the API.
type answer struct {
	catalog string
	obj     any
}

// outputFlags choose how answers are printed.
type outputFlags struct {
	format    string
	noHeaders bool
}

var formats = []string{"table", "wide", "json", "yaml", "name"}

func (o *outputFlags) bind(fs *pflag.FlagSet) {
	fs.StringVarP(&o.format, "output", "o", "table", "output format `"+strings.Join(formats, "|")+"`: json and yaml print the API's own objects (see openapi.yaml)")
	fs.BoolVar(&o.noHeaders, "no-headers", false, "with -o table or wide: leave out the header line")
}

func (o *outputFlags) validate() error {
	for _, f := range formats {
		if o.format == f {
			return nil
		}
	}
	return fmt.Errorf("unknown output format %q; use one of %s", o.format, strings.Join(formats, ", "))
}

// print writes the answers in the chosen format. JSON and YAML print each
// answer's API object unchanged, one document per catalog that answered,
// in catalog priority order; a table has a CATALOG column when the answers
// may come from several catalogs (no --catalog given). A table or list of
// names with nothing in it is not printed at all, header included; print
// reports whether it printed anything, so that the caller can say that
// there was nothing, as kubectl get does.
func (o *outputFlags) print(w io.Writer, answers []answer, catalogColumn bool) (bool, error) {
	switch o.format {
	case "json":
		for _, a := range answers {
			b, err := json.MarshalIndent(a.obj, "", "  ")
			if err != nil {
				return false, err
			}
			if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
				return false, err
			}
		}
		return true, nil
	case "yaml":
		for i, a := range answers {
			b, err := yaml.Marshal(a.obj)
			if err != nil {
				return false, err
			}
			if i > 0 {
				fmt.Fprintln(w, "---")
			}
			if _, err := w.Write(b); err != nil {
				return false, err
			}
		}
		return true, nil
	case "name":
		printed := false
		for _, a := range answers {
			for _, n := range namesOf(a.obj) {
				printed = true
				if _, err := fmt.Fprintln(w, termtext.Safe(n)); err != nil {
					return false, err
				}
			}
		}
		return printed, nil
	}
	tw := printers.GetNewTabWriter(w)
	if len(answers) > 0 && describes(answers[0].obj) {
		for i, a := range answers {
			if i > 0 {
				fmt.Fprintln(tw)
			}
			describe(tw, a.catalog, a.obj)
		}
		return true, tw.Flush()
	}
	tables := make([]table, len(answers))
	rows := 0
	for i, a := range answers {
		tables[i] = tableOf(a.obj)
		rows += len(tables[i].rows)
	}
	if rows == 0 {
		return false, nil
	}
	wide := o.format == "wide"
	header := true
	for i, a := range answers {
		t := tables[i]
		var keep []int
		var names []string
		if catalogColumn {
			names = append(names, "CATALOG")
		}
		for i, c := range t.columns {
			if !c.wide || wide {
				keep = append(keep, i)
				names = append(names, c.name)
			}
		}
		if header && !o.noHeaders {
			fmt.Fprintln(tw, strings.Join(names, "\t"))
		}
		header = false
		for _, row := range t.rows {
			var cells []string
			if catalogColumn {
				cells = append(cells, termtext.Safe(a.catalog))
			}
			for _, i := range keep {
				cells = append(cells, termtext.Safe(orNone(row[i])))
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
	}
	return true, tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
