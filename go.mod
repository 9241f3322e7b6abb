module github.com/hlomem/hlomem

go 1.26

require (
	github.com/google/go-cmp v0.6.0
	github.com/rogpeppe/go-internal v1.16.0
)

require (
	golang.org/x/sys v0.26.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
