package serve

import "github.com/OpenAdaptAI/openadapt-agent/internal/runstore"

// RunMessage is the fixed copy of a frozen outcome's message key
// (docs/runs.md "Messages"), as a run tool's result carries it; a key this build does not know gets the generic error copy.
// `openadapt-agent runs show` prints it beside the local record.
func RunMessage(key runstore.MessageKey) string { return messageText(key) }

// RunningMessage is the fixed copy of a run that is still in progress.
func RunningMessage() string { return msgRunning }
