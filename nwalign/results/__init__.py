"""A search's results: hits (`hits`), Karlin-Altschul statistics (`statistics`), both DNA strands (`strands`)."""
