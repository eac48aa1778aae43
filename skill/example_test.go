package skill_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/OpenAdaptAI/openadapt-agent/skill"
)

func ExampleValidate() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "Demo")
	os.Mkdir(p, 0o755)
	os.WriteFile(filepath.Join(p, "SKILL.md"), []byte("---\nname: Demo\ndescription: A demo.\n---\n"), 0o644)

	rep, err := skill.Validate(p)
	if err != nil {
		panic(err)
	}
	for _, f := range rep.Findings {
		fmt.Printf("%s [%s]\n", f.Message, f.ID)
	}
	fmt.Println("valid:", rep.Valid(false))
	// Output:
	// Skill name 'Demo' must be lowercase [name-case]
	// Skill name 'Demo' contains invalid characters; only a-z, 0-9 and - are allowed [name-chars]
	// valid: false
}

func ExampleTreeDigest() {
	sums := []byte("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  SKILL.md\n")
	fmt.Println(skill.TreeDigest(sums))
	// Output: h1:BKwk5itnTbVhtz3dK3FTRg4n2A+M0LeYvm4vp2sAXx4=
}

func ExampleFormatFor() {
	for _, name := range []string{"demo.skill", "demo.tar.zst", "demo.tgz"} {
		f, err := skill.FormatFor(name)
		fmt.Println(name, f, err != nil)
	}
	// Output:
	// demo.skill zip false
	// demo.tar.zst tar.zst false
	// demo.tgz  true
}
