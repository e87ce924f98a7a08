// Package observe lets the emulator's own tests see every answer it gives, whole, so they can
// check each one against the published OpenAPI document. The emulator never sets the hook.
package observe

import "net/http"

// Hook, when set, is called as each request enters the emulator, with the writer the answer is
// about to go to. It returns the writer to answer on instead (which must pass everything on to
// w, and unwrap to it for http.ResponseController) and a function the emulator calls once the
// answer is complete, with the id of the fault injected into it ("" for none) and whether the
// tenant's scenario had the forward-compatibility mode on, which takes answers beyond the
// document on purpose. Tests set it
// before their first request and never change it while requests run.
var Hook func(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func(fault string, evolved bool))
