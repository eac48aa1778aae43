// Package mailbox is the outbound client of OpenAdapt's hosted authoring
// mailbox (docs/mailbox.md), used by `authoring connect`. It lives with the
// authoring feature because it drives the same [authoring.Session] the MCP
// tools drive, and answers with the same projections. It parses the
// openadapt://runner link a person pastes, claims the job with its one-time
// oab_ bind token, polls for commands with wait_seconds 0, asks the person on
// the controlling terminal to Allow each OAuth subject, runs allowed commands
// against the local authoring session, and posts projected results back.
//
// It only ever makes outbound POST requests to the fixed origin
// https://openadapt.ai (tests may name a loopback origin through
// OPENADAPT_MAILBOX_ORIGIN); it never listens. The bind token and the lease
// secret are [Secret] values: every fmt verb, JSON and slog rendering of them
// is a fixed placeholder, so they cannot reach logs or error text by accident.
package mailbox
