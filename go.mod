module github.com/weftlabs/weft

go 1.26
