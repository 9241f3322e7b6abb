module github.com/hlomem/hlomem

go 1.26.0

require (
	github.com/google/go-cmp v0.6.0
	github.com/google/pprof v0.0.0-20261105003125-4bf881d7fb0b
	github.com/rogpeppe/go-internal v1.16.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.32.0
	gonum.org/v1/gonum v0.17.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/tools v0.30.0 // indirect
)
