"""Test harness: a scripted stand-in for the model APIs, scenario files, and a runner that
drives a real CLI (or the bridge in front of one) through a scenario and records it."""
