package quotes

// MarkerSize is what a quote's marker counts against its account's bound for markers.
func MarkerSize(q Quote) int64 {
	return markerSize(&record{id: q.ID, model: q.Model, usedBy: q.UsedBy})
}
