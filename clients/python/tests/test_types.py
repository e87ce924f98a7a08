"""The wire types follow what the emulator sends: a field the document does not require may be
absent, and the TypedDicts say so."""

from mediagen_emulator import JournalEntry


def test_journal_entry_of_a_success_has_no_code(mediagen):
    mediagen.control.health()
    mediagen.control.clear_requests()
    import urllib.request

    req = urllib.request.Request(mediagen.base_url + "/v1/models?limit=1",
                                 headers={"Authorization": "Bearer " + mediagen.api_key})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=30) as resp:
        assert resp.status == 200
    (entry,) = mediagen.control.requests(path="/v1/models")
    assert "code" not in entry
    assert "code" in JournalEntry.__optional_keys__
    assert JournalEntry.__required_keys__ <= set(entry)
    assert {"tenant", "request_body", "response_body"} <= set(JournalEntry.__annotations__)
