// Command olm-packagemanifests lists or gets PackageManifests through OLM
// v0's own generated clientset (packageserver's, from
// operator-lifecycle-manager), unchanged: the real OLM v0 client that the
// package API's tests run against catalogd. It prints what the clientset
// decoded, as JSON.
//
//	olm-packagemanifests --server URL --token TOKEN [--namespace NS] list [LABEL-SELECTOR]
//	olm-packagemanifests --server URL --token TOKEN [--namespace NS] get NAME
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/operator-framework/operator-lifecycle-manager/pkg/package-server/client/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

func main() {
	server := flag.String("server", "", "URL of the package API")
	token := flag.String("token", "", "bearer token")
	namespace := flag.String("namespace", "default", "namespace to read packages in")
	flag.Parse()
	if err := run(*server, *token, *namespace, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "olm-packagemanifests:", err)
		os.Exit(1)
	}
}

func run(server, token, namespace string, args []string) error {
	cs, err := versioned.NewForConfig(&rest.Config{Host: server, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		return err
	}
	pms := cs.PackagesV1().PackageManifests(namespace)
	var out any
	switch {
	case len(args) >= 1 && args[0] == "list":
		opts := metav1.ListOptions{}
		if len(args) == 2 {
			opts.LabelSelector = args[1]
		}
		out, err = pms.List(context.Background(), opts)
	case len(args) == 2 && args[0] == "get":
		out, err = pms.Get(context.Background(), args[1], metav1.GetOptions{})
	default:
		return fmt.Errorf("usage: list [SELECTOR] | get NAME")
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
