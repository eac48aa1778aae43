package fakeflow

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// emitSkill plays `openadapt-flow emit-skill BUNDLE --out PARENT`
// (docs/skills.md, Emit): it writes PARENT/<slug>/SKILL.md and a verbatim copy of
// BUNDLE in PARENT/<slug>/bundle/, prints "Skill written to <dir>" and exits
// 0. MODE exit1, two-dirs, no-bundle, alter-copy and hang give the failure
// layouts the skill tests need.
func emitSkill(k knobs, args []string) int {
	record(k, "", "", nil, "")
	out := flagValue(args, "--out")
	var bundle string
	for i := 0; i < len(args); i++ {
		if args[i] == "--out" {
			i++
			continue
		}
		bundle = args[i]
		break
	}
	if bundle == "" || out == "" {
		fmt.Fprintln(os.Stderr, "usage: openadapt-flow emit-skill BUNDLE --out DIR")
		return 2
	}
	switch k["MODE"] {
	case "hang":
		signalReady(k)
		sleepForever()
	case "exit1":
		fmt.Fprintln(os.Stderr, "Traceback (most recent call last):\nopenadapt_flow.bundle.BundleIntegrityError: fake failure")
		return 1
	}
	slug := "workflow"
	skillMD := []byte("---\nname: workflow\ndescription: Replay the recorded 'workflow' workflow (0 deterministic vision-anchored steps) against a live app with self-healing on UI drift.\n---\n\n# workflow\n")
	if src := k["SKILL"]; src != "" {
		slug = filepath.Base(src)
		data, err := os.ReadFile(filepath.Join(src, "SKILL.md"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakeflow:", err)
			return 1
		}
		skillMD = data
	}
	dir := filepath.Join(out, slug)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "fakeflow:", err)
		return 1
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), skillMD, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "fakeflow:", err)
		return 1
	}
	if k["MODE"] != "no-bundle" {
		if err := copyTree(bundle, filepath.Join(dir, "bundle")); err != nil {
			fmt.Fprintln(os.Stderr, "fakeflow:", err)
			return 1
		}
	}
	switch k["MODE"] {
	case "two-dirs":
		extra := filepath.Join(out, slug+"-2")
		_ = os.MkdirAll(extra, 0o755)
		_ = os.WriteFile(filepath.Join(extra, "SKILL.md"), skillMD, 0o644)
	case "alter-copy":
		if err := alterOneFile(filepath.Join(dir, "bundle")); err != nil {
			fmt.Fprintln(os.Stderr, "fakeflow:", err)
			return 1
		}
	}
	fmt.Fprintf(os.Stdout, "Skill written to %s\n", dir)
	return 0
}

// copyTree copies regular files and directories from src to dst, keeping
// the permission bits. Symlinks and special files are skipped.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case info.Mode().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// alterOneFile appends a byte to workflow.json, or to the first regular file
// in name order.
func alterOneFile(dir string) error {
	target := filepath.Join(dir, "workflow.json")
	if _, err := os.Stat(target); err != nil {
		var files []string
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				files = append(files, p)
			}
			return nil
		})
		if len(files) == 0 {
			return fmt.Errorf("alter-copy: no file to alter")
		}
		sort.Strings(files)
		target = files[0]
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(" ")); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
