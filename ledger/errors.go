package ledger

import (
	"errors"
	"fmt"
)

// Sentinel errors. Verdicts (active, not_active and their reasons) are values
// in a [Result], never errors: an error means the question could not be asked,
// because input was unreadable or an option was wrong.
var (
	// ErrInput is the root of every error about unreadable, unparseable or
	// unrecognised input. Commands map it to exit code 2.
	ErrInput = errors.New("ledger input")
	// ErrUnknownDocument: the top-level schema_version is not one of the four
	// known document kinds (docs/ledger.md, Inputs).
	ErrUnknownDocument = fmt.Errorf("%w: unknown document kind", ErrInput)
	// ErrNoDocuments: an evidence-root directory holds none of the known
	// documents (docs/ledger.md, Inputs).
	ErrNoDocuments = fmt.Errorf("%w: no ledger documents in directory", ErrInput)
	// ErrNoWorkflowDocument: an admission query was asked of input that has
	// no workflow ledger or workflow projection.
	ErrNoWorkflowDocument = fmt.Errorf("%w: no workflow admissions document", ErrInput)
	// ErrOption reports an invalid or conflicting option.
	ErrOption = fmt.Errorf("%w: invalid option", ErrInput)
	// ErrNotCanonical is returned by [CheckCanonical].
	ErrNotCanonical = errors.New("not canonical json + lf")
	// ErrSigstoreInput reports an unreadable Sigstore bundle, trusted root or
	// key (exit 2).
	ErrSigstoreInput = fmt.Errorf("%w: sigstore material", ErrInput)
	// ErrSigstoreVerification reports a Sigstore bundle that did not verify.
	ErrSigstoreVerification = errors.New("sigstore verification failed")
	// ErrRefParse is returned by [ParseReference] for a malformed reference.
	ErrRefParse = errors.New("malformed object reference")
)
