module github.com/hlomem/hlomem

go 1.26
