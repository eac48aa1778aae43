package ledgergen

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
)

// VirtualSigstoreFiles signs artifact with sigstore-go's in-memory CA
// (pkg/testing/ca) as a keyless DSSE in-toto attestation and writes a real
// Sigstore bundle v0.3 and a trusted_root.json for it. The certificates
// carry no SCT, so verification needs --insecure-ignore-sct.
func VirtualSigstoreFiles(artifact []byte, dir, san, issuer string) (bundlePath, rootPath string, err error) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(artifact)
	stmt, _ := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": "ledger.json", "digest": map[string]string{"sha256": hex.EncodeToString(sum[:])}}},
		"predicateType": "https://openadapt.ai/test/ledger-signature/v1",
		"predicate":     map[string]any{},
	})
	integrated := time.Now().Add(5 * time.Minute) // inside the leaf certificate window, as ca.Sign does
	ent, err := vs.AttestAtTime(san, issuer, stmt, integrated, true)
	if err != nil {
		return "", "", err
	}
	vc, _ := ent.VerificationContent()
	sc, _ := ent.SignatureContent()
	tss, _ := ent.Timestamps()
	entries, _ := ent.TlogEntries()
	env := sc.EnvelopeContent().RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return "", "", err
	}
	var sigs []*protodsse.Signature
	for _, s := range env.Signatures {
		raw, _ := base64.StdEncoding.DecodeString(s.Sig)
		sigs = append(sigs, &protodsse.Signature{Sig: raw, Keyid: s.KeyID})
	}
	var tles []*protorekor.TransparencyLogEntry
	for _, e := range entries {
		tle := e.TransparencyLogEntry()
		tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
		logID, _ := vs.RekorLogID()
		set, err := vs.RekorSignPayload(tlog.RekorPayload{
			Body:           base64.StdEncoding.EncodeToString(tle.CanonicalizedBody),
			IntegratedTime: tle.IntegratedTime,
			LogIndex:       tle.LogIndex,
			LogID:          logID,
		})
		if err != nil {
			return "", "", err
		}
		tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
		tles = append(tles, tle)
	}
	var rfc []*protocommon.RFC3161SignedTimestamp
	for _, ts := range tss {
		rfc = append(rfc, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
	}
	pb := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content:                   &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
			TlogEntries:               tles,
			TimestampVerificationData: &protobundle.TimestampVerificationData{Rfc3161Timestamps: rfc},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: env.PayloadType, Signatures: sigs,
		}},
	}
	return writeVirtual(vs, pb, dir)
}

// VirtualSigstoreBlobFiles is VirtualSigstoreFiles for a plain message
// signature over the artifact (what `cosign sign-blob` produces): a
// hashedrekord Rekor v1 entry with inclusion proof and promise, an RFC 3161
// timestamp and a Fulcio certificate without SCT.
func VirtualSigstoreBlobFiles(artifact []byte, dir, san, issuer string) (bundlePath, rootPath string, err error) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		return "", "", err
	}
	ent, err := vs.SignAtTime(san, issuer, artifact, time.Now().Add(5*time.Minute))
	if err != nil {
		return "", "", err
	}
	vc, _ := ent.VerificationContent()
	sc, _ := ent.SignatureContent()
	tss, _ := ent.Timestamps()
	entries, _ := ent.TlogEntries()
	ms := sc.MessageSignatureContent()
	var tles []*protorekor.TransparencyLogEntry
	for _, e := range entries {
		tle := e.TransparencyLogEntry()
		tle.KindVersion = &protorekor.KindVersion{Kind: "hashedrekord", Version: "0.0.1"}
		proof, err := vs.GetInclusionProof(tle.CanonicalizedBody)
		if err != nil {
			return "", "", err
		}
		rootHash, _ := hex.DecodeString(*proof.RootHash)
		var hashes [][]byte
		for _, h := range proof.Hashes {
			b, _ := hex.DecodeString(h)
			hashes = append(hashes, b)
		}
		tle.LogIndex = *proof.LogIndex
		tle.InclusionProof = &protorekor.InclusionProof{LogIndex: *proof.LogIndex, RootHash: rootHash, TreeSize: *proof.TreeSize,
			Hashes: hashes, Checkpoint: &protorekor.Checkpoint{Envelope: *proof.Checkpoint}}
		logID, _ := vs.RekorLogID()
		set, err := vs.RekorSignPayload(tlog.RekorPayload{Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody),
			IntegratedTime: tle.IntegratedTime, LogIndex: tle.LogIndex, LogID: logID})
		if err != nil {
			return "", "", err
		}
		tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
		tles = append(tles, tle)
	}
	var rfc []*protocommon.RFC3161SignedTimestamp
	for _, ts := range tss {
		rfc = append(rfc, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
	}
	pb := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content:                   &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
			TlogEntries:               tles,
			TimestampVerificationData: &protobundle.TimestampVerificationData{Rfc3161Timestamps: rfc},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: ms.Digest()},
			Signature:     ms.Signature(),
		}},
	}
	return writeVirtual(vs, pb, dir)
}

// writeVirtual writes the bundle and the in-memory CA's trusted root.
func writeVirtual(vs *ca.VirtualSigstore, pb *protobundle.Bundle, dir string) (bundlePath, rootPath string, err error) {
	bj, err := (&sgbundle.Bundle{Bundle: pb}).MarshalJSON()
	if err != nil {
		return "", "", err
	}
	// The in-memory CA keys its logs by the hex log id but stores that hex
	// text as the id bytes; a trusted_root.json carries the raw id bytes.
	rawIDs := func(m map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
		for k, tl := range m {
			if raw, err := hex.DecodeString(k); err == nil {
				tl.ID = raw
			}
		}
		return m
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), rawIDs(vs.CTLogs()),
		vs.TimestampingAuthorities(), rawIDs(vs.RekorLogs()))
	if err != nil {
		return "", "", err
	}
	rj, err := tr.MarshalJSON()
	if err != nil {
		return "", "", err
	}
	bundlePath, rootPath = filepath.Join(dir, "ledger.sigstore.json"), filepath.Join(dir, "trusted_root.json")
	if err := os.WriteFile(bundlePath, bj, 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(rootPath, rj, 0o644); err != nil {
		return "", "", err
	}
	return bundlePath, rootPath, nil
}
