module github.com/OpenAdaptAI/openadapt-agent

go 1.26.0

require (
	github.com/adrg/frontmatter v0.2.0
	github.com/google/go-cmp v0.7.0
	github.com/klauspost/compress v1.18.6
	github.com/rogpeppe/go-internal v1.16.0
	github.com/spf13/cobra v1.10.2
	golang.org/x/crypto v0.59.0
)

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.6 // indirect
	gopkg.in/yaml.v2 v2.4.0
)

require (
	github.com/BurntSushi/toml v0.3.1 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
