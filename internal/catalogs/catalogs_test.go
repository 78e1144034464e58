package catalogs

import (
	"reflect"
	"testing"
)

func TestListOrder(t *testing.T) {
	r := NewTable()
	for _, c := range []Catalog{
		{Name: "b", Priority: 0}, {Name: "a", Priority: 0}, {Name: "z", Priority: 10}, {Name: "m", Priority: -5},
	} {
		r.Put(c)
	}
	var got []string
	for _, c := range r.List() {
		got = append(got, c.Name)
	}
	if want := []string{"z", "a", "b", "m"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List order = %v, want %v", got, want)
	}
}

func TestUpdate(t *testing.T) {
	r := NewTable()
	if r.Update("missing", func(c *Catalog) { c.LastError = "boom" }) {
		t.Error("Update of an unknown catalog reported success")
	}
	r.Put(Catalog{Name: "a", Priority: 3})
	if !r.Update("a", func(c *Catalog) { c.LastError = "boom" }) {
		t.Fatal("Update of a known catalog failed")
	}
	if c, _ := r.Get("a"); c.Priority != 3 || c.LastError != "boom" {
		t.Errorf("after Update: %+v", c)
	}
	r.Delete("a")
	if _, ok := r.Get("a"); ok {
		t.Error("Delete left the catalog")
	}
}

func TestLoaded(t *testing.T) {
	r := NewTable()
	if r.Loaded() {
		t.Fatal("a new table says it is loaded")
	}
	r.MarkLoaded()
	if !r.Loaded() {
		t.Error("MarkLoaded did not stick")
	}
}

func TestState(t *testing.T) {
	for _, tc := range []struct {
		unavailable, indexed bool
		want                 State
	}{
		{false, false, Pending},
		{false, true, Serving},
		{true, false, Unavailable},
		// Switched off while the loop has not removed the index yet: it
		// answers nothing already.
		{true, true, Unavailable},
	} {
		if got := (Catalog{Unavailable: tc.unavailable}).State(tc.indexed); got != tc.want {
			t.Errorf("unavailable %v, indexed %v: %s, want %s", tc.unavailable, tc.indexed, got, tc.want)
		}
	}
}
