// Command hello is the tiny static binary the image test packs instead of
// catalogd, which takes far longer to build.
package main

import "fmt"

func main() { fmt.Println("hello") }
