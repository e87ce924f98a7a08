// Package problem defines the errors the emulator's domain returns: each carries a stable code
// that the HTTP layer maps to a status and an RFC 9457 body in one place.
package problem

import (
	"github.com/mediagen/mediagen-emulator/emulator/api"

	"errors"
	"fmt"
)

// Code is the stable, machine-readable name of an error, as clients see it in `code`.
type Code string

// The codes of the wire contract.
const (
	InvalidJSON             Code = "invalid_json"
	InvalidParameter        Code = "invalid_parameter"
	MissingIdempotencyKey   Code = "missing_idempotency_key"
	Unauthenticated         Code = "unauthenticated"
	InsufficientCredits     Code = "insufficient_credits"
	PermissionDenied        Code = "permission_denied"
	ModelNotFound           Code = "model_not_found"
	QuoteNotFound           Code = "quote_not_found"
	JobNotFound             Code = "job_not_found"
	NotFound                Code = "not_found"
	MethodNotAllowed        Code = "method_not_allowed"
	ModelUnavailable        Code = "model_unavailable"
	QuoteAlreadyUsed        Code = "quote_already_used"
	JobNotCancelable        Code = "job_not_cancelable"
	PayloadTooLarge         Code = "payload_too_large"
	UnsupportedMediaType    Code = "unsupported_media_type"
	InvalidRequest          Code = "invalid_request"
	InvalidInput            Code = "invalid_input"
	QuoteExpired            Code = "quote_expired"
	QuoteMismatch           Code = "quote_mismatch"
	IdempotencyKeyReused    Code = "idempotency_key_reused"
	OutputExpired           Code = "output_expired"
	RateLimited             Code = "rate_limited"
	Internal                Code = "internal_error"
	ServiceUnavailable      Code = "service_unavailable"
	ControlAPIDisabled      Code = "control_api_disabled"
	AdminTokenRequired      Code = "admin_token_required"
	InvalidClockChange      Code = "invalid_clock_change"
	ScenarioNotFound        Code = "scenario_not_found"
	AccountNotFound         Code = "account_not_found"
	FaultInjected           Code = "fault_injected"
	ConflictingControlInput Code = "conflicting_control_input"
	InvalidTenant           Code = "invalid_tenant"
	TooManyTenants          Code = "too_many_tenants"
	TooManyQuotes           Code = "too_many_quotes"
	TooManyStreams          Code = "too_many_streams"
	RangeNotSatisfiable     Code = "range_not_satisfiable"
	PreconditionFailed      Code = "precondition_failed"
	TenantNotFound          Code = "tenant_not_found"
	TenantNotDeletable      Code = "tenant_not_deletable"
	MemoryBudgetExhausted   Code = "memory_budget_exhausted"
	InvalidSnapshot         Code = "invalid_snapshot"
	ContentPolicyViolation  Code = "content_policy_violation"
	ModelRetired            Code = "model_retired"
	ConcurrencyLimited      Code = "concurrency_limited"
	// InputURLRefused and InputTooLarge refuse a media input a hosted service would not fetch
	// (an unreachable URL) or take (a data: URI over the inline limit), when inputs are fetched.
	InputURLRefused Code = "input_url_refused"
	InputTooLarge   Code = "input_too_large"
)

// FieldError is one field-level problem: Pointer is a JSON Pointer into the request body, or
// Parameter names a query parameter.
type FieldError = api.FieldError

// Error is a classified error: what went wrong, in terms a client can act on.
type Error struct {
	Code   Code
	Detail string
	Errors []FieldError
	// RetryAfter, when positive, is sent as a Retry-After header: seconds, or the HTTP-date
	// that many seconds ahead when RetryAfterDate is set.
	RetryAfter     int
	RetryAfterDate bool
	// Extra holds additional members of the problem body (e.g. the permission needed).
	Extra map[string]any
	// Status, when set, replaces the code's usual status (an injected fault chooses both).
	Status int
}

// Error reports the code and detail, for logs.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Detail }

// New returns an Error with a formatted detail.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// As returns the classified error inside err, or nil when err is unclassified.
func As(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}
