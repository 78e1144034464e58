package grpcapi

import (
	"testing"

	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestBundleFieldNumbers: the field numbers appendBundle encodes are
// api.Bundle's, and the messages it holds number their string fields as
// appendStrings writes them, by their descriptors: a new operator-registry
// that renumbered one would fail here rather than answer garbage.
func TestBundleFieldNumbers(t *testing.T) {
	bundle := (&api.Bundle{}).ProtoReflect().Descriptor()
	for name, num := range map[protoreflect.Name]protowire.Number{
		"csvName": fieldCsvName, "packageName": fieldPackageName, "channelName": fieldChannelName, "csvJson": fieldCsvJSON,
		"object": fieldObject, "bundlePath": fieldBundlePath, "providedApis": fieldProvidedApis, "requiredApis": fieldRequiredApis,
		"version": fieldVersion, "skipRange": fieldSkipRange, "dependencies": fieldDependencies, "properties": fieldProperties,
		"replaces": fieldReplaces, "skips": fieldSkips, "deprecation": fieldDeprecation,
	} {
		f := bundle.Fields().ByName(name)
		if f == nil || protowire.Number(f.Number()) != num {
			t.Errorf("api.Bundle field %s: %v, want number %d", name, f, num)
		}
	}
	for _, m := range []struct {
		msg    proto.Message
		fields []protoreflect.Name
	}{
		{&api.Property{}, []protoreflect.Name{"type", "value"}},
		{&api.Dependency{}, []protoreflect.Name{"type", "value"}},
		{&api.GroupVersionKind{}, []protoreflect.Name{"group", "version", "kind"}},
		{&api.Deprecation{}, []protoreflect.Name{"message"}},
	} {
		d := m.msg.ProtoReflect().Descriptor()
		for i, name := range m.fields {
			f := d.Fields().ByName(name)
			if f == nil || int(f.Number()) != i+1 || f.Kind() != protoreflect.StringKind {
				t.Errorf("%s field %s: %v, want string number %d", d.FullName(), name, f, i+1)
			}
		}
	}
}
