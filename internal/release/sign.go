package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/release/signing"
)

// signFile signs in into the bundle out: key-based with a key made for this
// signature (its public key written to pub), or keyless.
func signFile(in, out, pub string, keyless bool) error {
	if in == "" || out == "" {
		return errors.New("sign: -in and -bundle are required")
	}
	if keyless == (pub != "") {
		return errors.New("sign: give exactly one of -public-key (key-based) and -keyless")
	}
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	if keyless {
		bj, err := signing.SignKeyless(context.Background(), data, signing.KeylessOptions{IDToken: os.Getenv("SIGSTORE_ID_TOKEN")})
		if err != nil {
			return err
		}
		return writeFileAtomic(out, bj)
	}
	// The public key must not travel with the release: a verifier who took
	// it from the same folder would trust whoever replaced both.
	absOut, err1 := filepath.Abs(filepath.Dir(out))
	absPub, err2 := filepath.Abs(pub)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if rel, err := filepath.Rel(absOut, absPub); err == nil && !strings.HasPrefix(rel, "..") {
		return errors.New("sign: -public-key must lie outside the release folder")
	}
	bj, key, err := signing.SignWithKey(data)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(pub, key); err != nil {
		return err
	}
	return writeFileAtomic(out, bj)
}
