// Command printversion prints version.String(); TestStamp builds it with and
// without the linker flag the Makefile passes.
package main

import (
	"fmt"

	"github.com/catalogd/catalogd/internal/version"
)

func main() { fmt.Print(version.String()) }
