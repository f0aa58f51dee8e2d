# Fake torch whose import fails like a Windows wheel missing a DLL (torch raises OSError there).
raise OSError(
    "[WinError 126] The specified module could not be found. Error loading "
    '"C:\\Users\\me\\venv\\lib\\site-packages\\torch\\lib\\c10.dll" or one of its dependencies.'
)
