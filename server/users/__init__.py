"""Users and tokens: who may call the API, and with which role."""
