// Package fbcgen writes synthetic file-based catalogs.
package fbcgen
