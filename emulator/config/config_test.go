package config_test

import (
	"io/fs"
	"log/slog"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/config"
	"github.com/mediagen/mediagen-emulator/fixtures"
)

// TestWithDefaults: a zero Settings comes out with every default, one with every setting
// given comes out as it went in, and a job retention below the output TTL is raised to it.
func TestWithDefaults(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	media := os.DirFS(".")
	start := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	given := config.Settings{
		CatalogFile: "catalog.yaml", Catalog: &config.Source{Name: "c", Data: []byte("x")},
		Scenario: "flaky", ManualClock: true, SkipClock: true, Start: start, Seeded: true, Seed: 9,
		MaxWait: time.Second, QuoteTTL: 2 * time.Second, OutputTTL: 3 * time.Second, JobRetention: 4 * time.Second,
		AdminToken: "t", ControlDisabled: true, MaxBodyBytes: 5, MaxSnapshotBytes: 6, MaxJobs: 7, MaxTenants: 8,
		TenantIdle: 9 * time.Second, MemoryBudget: 10, CORSOrigins: []string{"none"}, Media: media, Logger: logger,
		WebhookURL: "http://127.0.0.1:1/", WebhookSecret: "whsec_x", WebhookEvents: []string{"job.failed"},
		WebhookAllow: []string{"example.com"},
	}
	for _, tc := range []struct {
		name string
		in   config.Settings
		want config.Settings
	}{
		{"zero", config.Settings{}, config.Settings{
			Scenario: "default", Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			MaxWait: 180 * time.Second, QuoteTTL: 10 * time.Minute, OutputTTL: time.Hour, JobRetention: 24 * time.Hour,
			MaxBodyBytes: 1 << 20, MaxSnapshotBytes: 1 << 30, MaxJobs: 100_000, MaxTenants: 1000,
			TenantIdle: time.Hour, MemoryBudget: 1 << 30, CORSOrigins: []string{"*"},
		}},
		{"negative", config.Settings{MaxWait: -1, MaxJobs: -1, MemoryBudget: -1}, config.Settings{
			Scenario: "default", Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			MaxWait: 180 * time.Second, QuoteTTL: 10 * time.Minute, OutputTTL: time.Hour, JobRetention: 24 * time.Hour,
			MaxBodyBytes: 1 << 20, MaxSnapshotBytes: 1 << 30, MaxJobs: 100_000, MaxTenants: 1000,
			TenantIdle: time.Hour, MemoryBudget: 1 << 30, CORSOrigins: []string{"*"},
		}},
		{"every setting given", given, given},
		{"the snapshot bound follows the budget", config.Settings{MemoryBudget: 2 << 30}, config.Settings{
			Scenario: "default", Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			MaxWait: 180 * time.Second, QuoteTTL: 10 * time.Minute, OutputTTL: time.Hour, JobRetention: 24 * time.Hour,
			MaxBodyBytes: 1 << 20, MaxSnapshotBytes: 2 << 30, MaxJobs: 100_000, MaxTenants: 1000,
			TenantIdle: time.Hour, MemoryBudget: 2 << 30, CORSOrigins: []string{"*"},
		}},
		{"retention below the output TTL", config.Settings{OutputTTL: 48 * time.Hour, JobRetention: time.Hour}, config.Settings{
			Scenario: "default", Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			MaxWait: 180 * time.Second, QuoteTTL: 10 * time.Minute, OutputTTL: 48 * time.Hour, JobRetention: 48 * time.Hour,
			MaxBodyBytes: 1 << 20, MaxSnapshotBytes: 1 << 30, MaxJobs: 100_000, MaxTenants: 1000,
			TenantIdle: time.Hour, MemoryBudget: 1 << 30, CORSOrigins: []string{"*"},
		}},
		{"default retention below the output TTL", config.Settings{OutputTTL: 30 * time.Hour}, config.Settings{
			Scenario: "default", Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			MaxWait: 180 * time.Second, QuoteTTL: 10 * time.Minute, OutputTTL: 30 * time.Hour, JobRetention: 30 * time.Hour,
			MaxBodyBytes: 1 << 20, MaxSnapshotBytes: 1 << 30, MaxJobs: 100_000, MaxTenants: 1000,
			TenantIdle: time.Hour, MemoryBudget: 1 << 30, CORSOrigins: []string{"*"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.WithDefaults()
			// The media and the logger are compared by identity: the embedded fixtures and a
			// discarding logger when left out, the caller's own when given.
			wantMedia, wantLogger := tc.in.Media, tc.in.Logger
			if wantMedia == nil {
				wantMedia = fs.FS(fixtures.FS)
			}
			if got.Media != wantMedia {
				t.Errorf("Media = %v, want %v", got.Media, wantMedia)
			}
			if got.Logger == nil || wantLogger != nil && got.Logger != wantLogger {
				t.Errorf("Logger = %v, want %v", got.Logger, wantLogger)
			}
			if wantLogger == nil && got.Logger.Enabled(t.Context(), slog.LevelError) {
				t.Error("the default logger writes; want one that discards")
			}
			got.Media, got.Logger = nil, nil
			want := tc.want
			want.Media, want.Logger = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("WithDefaults:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestWithDefaultsIsSettled: applying the defaults twice changes nothing, so the server and
// the core may both apply them.
func TestWithDefaultsIsSettled(t *testing.T) {
	once := config.Settings{OutputTTL: 30 * time.Hour}.WithDefaults()
	twice := once.WithDefaults()
	if !reflect.DeepEqual(once, twice) {
		t.Errorf("once %+v\ntwice %+v", once, twice)
	}
}
