"""Who a request comes from: the signed-in principal, resolved from a session token (shared by
the request dependencies, the organizers' sign-in and every organizer action)."""
