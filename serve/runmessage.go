package serve

// RunMessage is the fixed copy of a frozen outcome's message key (§8), as R
// carries it; a key this build does not know gets the generic error copy.
// `openadapt-agent runs show` prints it beside the local record.
func RunMessage(key string) string { return messageKey(key).text() }

// RunningMessage is the fixed copy of a run that is still in progress.
func RunningMessage() string { return msgRunning }
